import { packageConfig } from '../../vitest.shared.js';

export default packageConfig({
  name: 'limits-redis',
  coverageLines: 85,
  siblings: ['limits-core'],
  test: {
    // Records the pid of every redis-server the tests start and kills any left over (test/support/redis.ts).
    globalSetup: ['test/support/globalSetup.ts'],
  },
});
