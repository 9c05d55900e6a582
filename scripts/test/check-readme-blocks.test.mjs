// The docs check (scripts/check-readme-blocks.mjs) on READMEs written for each test, and on the real
// limits-core README. Needs the packages built, as the check itself does.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const script = join(root, 'scripts', 'check-readme-blocks.mjs');
const dirs = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the docs check on a README with this text; `env` adds to the environment. */
function checkReadme(text, env = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'limits-readme-test-'));
  dirs.push(dir);
  const readme = join(dir, 'README.md');
  writeFileSync(readme, text);
  const r = spawnSync(process.execPath, [script, readme], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { ...r, output: `${r.stdout}${r.stderr}` };
}

const ts = (code, before = '') => `${before}\n\`\`\`ts\n${code}\n\`\`\`\n`;

describe('the docs check', () => {
  it('runs a block that can run, and fails naming the README line where it threw', () => {
    const r = checkReadme(
      `# Title\n${ts("const n: number = 1;\nif (n === 1) throw new Error('the example is broken');")}`,
    );
    expect(r.status, r.output).toBe(1);
    expect(r.stderr).toMatch(/the block at \S*README\.md:4 exited with code 1/);
    expect(r.stderr).toMatch(/Error: the example is broken/);
    expect(r.stderr).toMatch(/README\.md:5:\d+/); // the throwing line, through the source map
  });

  it('typechecks only the blocks with a preamble or a no-run mark, and says how many ran', () => {
    const r = checkReadme(
      [
        ts(
          "import { Limiter } from 'limits-core';\nconsole.log(new Limiter({ limit: 2 }).capacity);",
        ),
        ts(
          'await search(1);',
          '<!-- preamble: declare function search(n: number): Promise<void>; -->',
        ),
        ts(
          "await fetch('https://api.example.com/');\nthrow new Error('must not run');",
          '<!-- no-run: calls https://api.example.com -->',
        ),
      ].join('\n'),
    );
    expect(r.status, r.output).toBe(0);
    expect(r.stdout).toMatch(
      /3 code blocks in \S*README\.md typecheck; 1 run to completion, 2 typechecked only \(1 with a preamble of free names, 1 marked no-run\)/,
    );
  });

  it('still fails a block that does not typecheck, and runs nothing then', () => {
    const r = checkReadme(ts("const n: number = 'one';\nthrow new Error('ran');"));
    expect(r.status, r.output).toBe(1);
    expect(r.stderr).toMatch(/README\.md:3:\d+: error TS2322/);
    expect(r.output).not.toMatch(/ran/);
  });

  it('stops a block that never ends (a server left open) after the timeout and fails it', () => {
    const r = checkReadme(
      ts("import { createServer } from 'node:http';\ncreateServer().listen(0, '127.0.0.1');"),
      { LIMITS_README_BLOCK_TIMEOUT_MS: '2000' },
    );
    expect(r.status, r.output).toBe(1);
    expect(r.stderr).toMatch(/README\.md:3 still running after 2 s \(a server, socket or timer/);
  });

  it('lets a block reach only this machine: a server on 127.0.0.1 yes, another host no', () => {
    const local = checkReadme(
      ts(
        [
          "import { once } from 'node:events';",
          "import { createServer } from 'node:http';",
          "import type { AddressInfo } from 'node:net';",
          "const server = createServer((_req, res) => res.end('hi')).listen(0, '127.0.0.1');",
          "await once(server, 'listening');",
          'const { port } = server.address() as AddressInfo;',
          "const res = await fetch('http://127.0.0.1:' + port + '/');",
          "if ((await res.text()) !== 'hi') throw new Error('wrong answer');",
          'server.close();',
        ].join('\n'),
      ),
    );
    expect(local.status, local.output).toBe(0);
    const remote = checkReadme(ts("await fetch('http://api.example.com/');"));
    expect(remote.status, remote.output).toBe(1);
    expect(remote.stderr).toMatch(
      /connection to api\.example\.com refused: .*only connect to this machine/,
    );
  });

  it('refuses a block timeout that is not a positive integer, naming the variable and the value', () => {
    const r = checkReadme(ts('export {};'), { LIMITS_README_BLOCK_TIMEOUT_MS: '0.5' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /LIMITS_README_BLOCK_TIMEOUT_MS must be an integer of at least 1 \(ms\), got "0\.5"/,
    );
  });

  it("runs every runnable block of limits-core's README to completion (the timeline chart example included)", () => {
    const r = spawnSync(process.execPath, [script, join(root, 'packages/limits-core/README.md')], {
      encoding: 'utf8',
    });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/[1-9]\d* run to completion/);
  });
});
