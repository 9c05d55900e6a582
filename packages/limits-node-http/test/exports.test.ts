import { describe, expect, it } from 'vitest';
import * as http from '../src/index.js';

describe('limits-node-http', () => {
  it('loads as an ES module', () => {
    expect(typeof http).toBe('object');
  });
});
