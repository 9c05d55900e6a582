// The vitest configuration every package shares (each package's vitest.config.ts calls it with what
// differs: its name, its coverage threshold, which sibling packages it imports, extra settings).
import { fileURLToPath } from 'node:url';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

type TestOptions = NonNullable<ViteUserConfig['test']>;

export interface PackageTestConfig {
  /** The package's folder name under packages/ (names its JSON report in CI). */
  name: string;
  /** Line coverage below which `vitest run --coverage` fails. */
  coverageLines: number;
  /** Sibling packages imported from their sources (so the suite needs no build step of theirs). */
  siblings?: readonly string[];
  /** Anything else for `test` (e.g. `globalSetup`, `include`). */
  test?: TestOptions;
}

export function packageConfig(o: PackageTestConfig) {
  // A sibling's public entry and its `/internal` entry (limits-core's), each to its source.
  const alias = (o.siblings ?? []).flatMap((s) => [
    {
      find: new RegExp(`^${s}$`),
      replacement: fileURLToPath(new URL(`./packages/${s}/src/index.ts`, import.meta.url)),
    },
    {
      find: new RegExp(`^${s}/internal$`),
      replacement: fileURLToPath(new URL(`./packages/${s}/src/internal.ts`, import.meta.url)),
    },
  ]);
  const report = process.env.LIMITS_TEST_REPORT_DIR;
  return defineConfig({
    resolve: { alias },
    test: {
      // CI collects a JSON report per package to print one "N passed, N failed" line (see .ci/run).
      reporters: report
        ? ['default', ['json', { outputFile: `${report}/${o.name}.json` }]]
        : ['default'],
      include: ['test/**/*.test.ts'],
      // Generous on purpose: the property tests are sized by run count, never by wall clock, and the
      // heaviest (the guard and limiter models, Redis stopped mid-run) take up to 5 s alone on a busy
      // 2-core machine; 120 s lets a machine four times slower still pass, and bounds a hung test.
      testTimeout: 120_000,
      hookTimeout: 120_000,
      // `npm test` runs `vitest run --coverage` (the package's test script); the threshold fails the run.
      coverage: {
        provider: 'v8',
        include: ['src/**/*.ts'],
        exclude: ['src/**/*.test.ts'],
        reporter: ['text-summary', ['json-summary', { file: 'coverage-summary.json' }]],
        thresholds: { lines: o.coverageLines },
      },
      ...o.test,
    },
  });
}
