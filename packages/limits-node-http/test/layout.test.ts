// The source layout src/index.ts describes: one folder per entry point, a shared part, and imports
// that go one way (an entry point's folder never uses another's).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../src', import.meta.url));

/** The folders of src/ and, for each, the folders its files may import from (itself included). */
const ALLOWED: Record<string, readonly string[]> = {
  fetch: ['fetch', 'shared', 'metrics'],
  interceptor: ['interceptor', 'shared', 'metrics'],
  loadShed: ['loadShed', 'shared', 'metrics'],
  metrics: ['metrics'],
  shared: ['shared'],
};

/** Every .ts file under src/, relative to it (`fetch/limitFetch.ts`). */
function sources(dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(src, path).split(sep).join('/')] : [];
  });
}

/** The relative imports of `file` (type-only ones included), resolved against src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(src, file), 'utf8');
  const specs = [...text.matchAll(/\bfrom\s+'(\.[^']+)'/g)].map((m) => m[1] as string);
  return specs.map((spec) =>
    relative(src, join(dirname(join(src, file)), spec))
      .split(sep)
      .join('/'),
  );
}

describe('the source layout', () => {
  it('holds index.ts and one folder per entry point, plus metrics/ and shared/', () => {
    const top = readdirSync(src).sort();
    expect(top).toEqual(['fetch', 'index.ts', 'interceptor', 'loadShed', 'metrics', 'shared']);
  });

  it("has each folder import only from the folders it may use: never another entry point's", () => {
    const wrong: string[] = [];
    for (const file of sources()) {
      const folder = file.split('/')[0] as string;
      if (file === 'index.ts') continue;
      for (const target of importsOf(file)) {
        const to = target.split('/')[0] as string;
        if (!(ALLOWED[folder] ?? []).includes(to)) wrong.push(`${file} imports ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('finds the imports it checks (a check that reads nothing would pass anything)', () => {
    expect(importsOf('fetch/limitFetch.ts')).toContain('shared/outcome.js');
    expect(importsOf('index.ts').length).toBeGreaterThan(10);
  });
});
