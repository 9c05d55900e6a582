import { packageConfig } from '../../vitest.shared.js';

export default packageConfig({
  name: 'limits-lab',
  coverageLines: 90,
  siblings: ['limits-core', 'limits-breaker'],
});
