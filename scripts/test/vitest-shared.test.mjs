import { describe, expect, it } from 'vitest';
import { packageConfig } from '../../vitest.shared.ts';

describe('the vitest configuration every package shares', () => {
  it('gives every test and hook 120 s, so a machine four times slower than a busy 2-core one still passes the heaviest property tests', () => {
    const { test } = packageConfig({ name: 'x', coverageLines: 0 });
    expect(test?.testTimeout).toBeGreaterThanOrEqual(120_000);
    expect(test?.hookTimeout).toBeGreaterThanOrEqual(120_000);
  });
});
