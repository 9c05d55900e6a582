import { packageConfig } from '../../vitest.shared.js';

export default packageConfig({
  name: 'limits-grpc',
  coverageLines: 85,
  siblings: ['limits-core', 'limits-breaker'],
});
