import { packageConfig } from '../../vitest.shared.js';

export default packageConfig({
  name: 'limits-core',
  coverageLines: 90,
  test: { include: ['test/**/*.test.ts', 'src/**/*.test.ts'] },
});
