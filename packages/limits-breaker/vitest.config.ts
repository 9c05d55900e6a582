import { packageConfig } from '../../vitest.shared.js';

export default packageConfig({
  name: 'limits-breaker',
  coverageLines: 85,
  siblings: ['limits-core'],
});
