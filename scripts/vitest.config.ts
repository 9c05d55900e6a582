import { packageConfig } from '../vitest.shared.js';

// The repository's own scripts (the test command's runner and summary, the README check, the
// installers): `pnpm run test:scripts`, one of the suites `npm test` runs.
export default packageConfig({
  name: 'scripts',
  coverageLines: 0,
  test: { include: ['test/**/*.test.mjs'] },
});
