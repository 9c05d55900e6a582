import { describe, expect, it } from 'vitest';
import * as http from '../src/index.js';

describe('limits-redis', () => {
  it('loads as an ES module', () => {
    expect(typeof http).toBe('object');
  });
});
