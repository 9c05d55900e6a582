import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Test against limits-core's source, so the suite needs no build step.
    alias: {
      'limits-core': fileURLToPath(new URL('../limits-core/src/index.ts', import.meta.url)),
    },
  },
  test: {
    // CI collects a JSON report per package to print one "N passed, N failed" line (see .ci/run).
    reporters: process.env.LIMITS_TEST_REPORT_DIR
      ? [
          'default',
          ['json', { outputFile: `${process.env.LIMITS_TEST_REPORT_DIR}/limits-redis.json` }],
        ]
      : ['default'],
    include: ['test/**/*.test.ts'],
    // Records the pid of every redis-server the tests start and kills any left over (test/support/redis.ts).
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 20_000,
    // `npm test` runs `vitest run --coverage` (the package's test script); the threshold fails the run.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/**/*.test.ts'],
      reporter: ['text-summary', ['json-summary', { file: 'coverage-summary.json' }]],
      thresholds: { lines: 85 },
    },
  },
});
