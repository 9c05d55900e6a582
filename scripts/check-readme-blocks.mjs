// Checks every TypeScript / JavaScript code block of README.md and packages/*/README.md, so the docs
// cannot rot (run by `check`, so by `npm test`): each block must typecheck, and each block that can run
// as it is must run to completion. Needs the packages built: blocks import `limits-core`,
// `limits-breaker`, ... the way a user does, through their published files.
//
//   node scripts/check-readme-blocks.mjs                  every README
//   node scripts/check-readme-blocks.mjs <README path>... only these
//
// Which blocks: fences tagged `ts`, `typescript`, `js`, `mjs` or `javascript`. Other tags (`sh`, `text`)
// are not checked. Every such block must typecheck on its own, as a module, under the repository's
// strict settings (unused names are allowed: a snippet may declare what it shows).
//
// Running: each block that can run is compiled and run on its own by Node, in a scratch folder (files it
// writes go there), with connections only to this machine (scripts/loopback-only.mjs) and at most
// LIMITS_README_BLOCK_TIMEOUT_MS (30 s by default) to end: it must exit 0 by itself, so a block that
// starts a server closes it. Two kinds of block are typechecked only:
//
// - A block with free variables: a snippet may use names it does not define (`API`, `cachedUser`,
//   `search`), standing for the reader's own code. Declare them in an HTML comment right before the
//   fence (blank lines between are allowed); the comment is not rendered on GitHub or npm, and its text is
//   put before the block:
//
//       <!-- preamble: declare const API: string; declare function cachedUser(id: string): unknown; -->
//       ```ts
//       ...
//       ```
//
//   A preamble may span several lines. Keep preambles to declarations: the block itself is the example.
//   A `js` block is checked as an .mjs file (`// @ts-check`), so its preamble must be JavaScript (JSDoc
//   types: `/** @type {string} */ const API = '';`), not `declare`.
// - A block marked `<!-- no-run: why -->` in the same place, e.g. one that calls a public API.
//
// Errors are reported as README path:line.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const loopbackOnly = fileURLToPath(new URL('./loopback-only.mjs', import.meta.url));
const timeoutMs = Number(process.env.LIMITS_README_BLOCK_TIMEOUT_MS ?? 30_000);
if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
  console.error(
    `check-readme-blocks: LIMITS_README_BLOCK_TIMEOUT_MS must be an integer of at least 1 (ms), got "${process.env.LIMITS_README_BLOCK_TIMEOUT_MS}"`,
  );
  process.exit(1);
}
// README paths relative to the repository (or absolute, e.g. a test's own README).
const readmes =
  process.argv.length > 2
    ? process.argv.slice(2).map((p) => relative(root, resolve(p)))
    : [
        'README.md',
        ...readdirSync(join(root, 'packages'))
          .map((p) => join('packages', p, 'README.md'))
          .filter((p) => existsSync(join(root, p))),
      ];
const checked = new Set(['ts', 'typescript', 'js', 'mjs', 'javascript']);

/**
 * Every checked block of one README: its first code line (1-based), tag, preamble, why it does not
 * run (`noRun`, or `undefined` when it runs) and code.
 */
function blocksOf(path) {
  const lines = readFileSync(join(root, path), 'utf8').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+|~~~+)\s*([\w-]*)/.exec(lines[i]);
    if (open === null) continue;
    const [, indent, fence, tag] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith(`${indent}${fence}`)) end++;
    if (checked.has(tag.toLowerCase())) {
      const { preamble, noRun } = commentBefore(lines, i);
      blocks.push({
        line: i + 2,
        js: tag.toLowerCase() !== 'ts' && tag.toLowerCase() !== 'typescript',
        preamble,
        noRun: noRun ?? (preamble === '' ? undefined : 'preamble'),
        code: lines
          .slice(i + 1, end)
          .map((l) => l.slice(indent.length))
          .join('\n'),
      });
    }
    i = end;
  }
  return blocks;
}

/**
 * What the comment that ends right before line `fence` (blank lines skipped) says of the block:
 * `{ preamble }`, the text of a `<!-- preamble: ... -->` ('' without one), and `noRun`, the reason
 * of a `<!-- no-run: ... -->`.
 */
function commentBefore(lines, fence) {
  let j = fence - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0 || !lines[j].trimEnd().endsWith('-->')) return { preamble: '' };
  let k = j;
  while (k >= 0 && !lines[k].includes('<!--')) k--;
  const comment = lines
    .slice(k, j + 1)
    .join('\n')
    .replace(/^[\s\S]*?<!--/, '')
    .replace(/-->\s*$/, '');
  const noRun = /^\s*no-run:([\s\S]*)$/.exec(comment);
  if (noRun !== null) return { preamble: '', noRun: noRun[1].trim() || 'marked no-run' };
  const match = /^\s*preamble:([\s\S]*)$/.exec(comment);
  return { preamble: match === null ? '' : match[1].trim() };
}

// The blocks go into a folder under examples/, whose node_modules resolve the workspace packages. A
// package that examples/ does not depend on (limits-redis: its blocks import ioredis) has its README's
// blocks checked in a folder inside the package instead, where its own dependencies and its own name
// (a self-reference through its `exports`) resolve. The folder is this process's own (two checks may run
// at once) and is removed at the end.
const groups = new Map(); // folder → README paths
for (const readme of readmes) {
  if (blocksOf(readme).length === 0) continue;
  const pkg = /^packages[\\/]([^\\/]+)[\\/]README\.md$/.exec(readme)?.[1];
  const viaExamples = pkg === undefined || existsSync(join(root, 'examples', 'node_modules', pkg));
  const dir = join(
    viaExamples ? join(root, 'examples') : join(root, 'packages', pkg),
    '.readme-blocks',
    String(process.pid),
  );
  if (!groups.has(dir)) groups.set(dir, []);
  groups.get(dir).push(readme);
}
const counts = { blocks: 0, run: 0, preamble: 0, noRun: 0 };
for (const [dir, group] of groups) checkGroup(dir, group);

/**
 * Typechecks the blocks of `group` (README paths) in the folder `dir`, then runs those that can run;
 * the folder is removed afterwards.
 */
function checkGroup(dir, group) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const origin = new Map(); // file name → { readme, line, preambleLines }
  const runnable = []; // { name, readme, line }
  /** "Readme_L19.ts", line 5, column 3 → "README.md:23:3" (undefined for a file not of a block). */
  const inReadme = (file, line, col) => {
    const o = origin.get(file.split(/[\\/]/).pop());
    if (o === undefined) return undefined;
    const inBlock = Number(line) - o.preambleLines;
    return inBlock >= 1
      ? `${o.readme}:${o.line + inBlock - 1}:${col}`
      : `${o.readme}:${o.line - 1} (the preamble before the block)`;
  };
  try {
    for (const readme of group) {
      for (const block of blocksOf(readme)) {
        // packages/x/README.md → packages_x_README_L12.ts (no leading dot: tsc skips dotfiles).
        const base = readme
          .replaceAll(/[\\/]/g, '_')
          .replace(/^[._]+/, '')
          .replace(/\.md$/, '');
        const name = `${base}_L${block.line}.${block.js ? 'mjs' : 'ts'}`;
        const head = [block.js ? '// @ts-check' : '', block.preamble].filter(Boolean).join('\n');
        const preambleLines = head === '' ? 0 : head.split('\n').length;
        writeFileSync(
          join(dir, name),
          `${head}${head === '' ? '' : '\n'}${block.code}\nexport {};\n`,
        );
        origin.set(name, { readme, line: block.line, preambleLines });
        counts.blocks++;
        if (block.noRun === undefined) runnable.push({ name, readme, line: block.line });
        else if (block.preamble !== '') counts.preamble++;
        else counts.noRun++;
      }
    }
    // Inside a package, its own package.json must be the nearest one (type module, self-reference).
    if (dir.startsWith(join(root, 'examples')))
      writeFileSync(
        join(dir, 'package.json'),
        `${JSON.stringify({ name: 'readme-blocks', private: true, type: 'module' })}\n`,
      );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      `${JSON.stringify({
        extends: relative(dir, join(root, 'tsconfig.base.json')).replaceAll('\\', '/'),
        compilerOptions: {
          // JavaScript in out/ for the blocks that run, with source maps for their stack traces.
          noEmit: false,
          outDir: 'out',
          rootDir: '.',
          declaration: false,
          declarationMap: false,
          sourceMap: true,
          noUnusedLocals: false,
          noUnusedParameters: false,
          allowJs: true,
          checkJs: true,
        },
        include: ['*.ts', '*.mjs'],
      })}\n`,
    );
    try {
      execFileSync(
        process.execPath,
        [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir],
        {
          cwd: dir,
          encoding: 'utf8',
          stdio: 'pipe',
        },
      );
    } catch (error) {
      const out = `${error.stdout ?? ''}${error.stderr ?? ''}`;
      // "Readme_L19.ts(5,3): error TS…" → "README.md:23:3: error TS…"
      const mapped = out.replace(
        /^([^\s(]+)\((\d+),(\d+)\)/gm,
        (all, file, line, col) => inReadme(file, line, col) ?? all,
      );
      console.error(`check-readme-blocks: README code blocks that do not typecheck:\n${mapped}`);
      process.exitCode = 1;
      return; // nothing runs before every block typechecks
    }
    for (const block of runnable) {
      const js = join(dir, 'out', block.name.replace(/\.ts$/, '.js'));
      const run = spawnSync(process.execPath, ['--enable-source-maps', loopbackOnly, js], {
        cwd: dir,
        encoding: 'utf8',
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
      });
      if (run.status === 0) {
        counts.run++;
        continue;
      }
      const why =
        run.error?.code === 'ETIMEDOUT'
          ? `still running after ${timeoutMs / 1000} s (a server, socket or timer left open?), stopped`
          : `exited with ${run.status === null ? `signal ${run.signal}` : `code ${run.status}`}`;
      // Stack frames "…/Readme_L19.ts:5:3" → "README.md:23:3".
      const output = `${run.stdout ?? ''}${run.stderr ?? ''}`
        .replace(
          /(?:file:\/\/)?[^\s()]*?([^\s()\\/]+\.(?:ts|mjs)):(\d+):(\d+)/g,
          (all, file, line, col) => inReadme(file, line, col) ?? all,
        )
        .trimEnd()
        .replace(/^/gm, '    ');
      console.error(
        `check-readme-blocks: the block at ${block.readme}:${block.line} ${why}:\n${output}`,
      );
      process.exitCode = 1;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    try {
      rmdirSync(dirname(dir)); // .readme-blocks, once no other check uses it
    } catch {}
  }
}
if (process.exitCode === 1) {
  console.error(
    "check-readme-blocks: a block that stands for the reader's own code gets a <!-- preamble: … --> of its free names, one that needs the network a <!-- no-run: why -->; any other block must run to completion by itself",
  );
} else {
  const typecheckOnly = counts.preamble + counts.noRun;
  console.log(
    `check-readme-blocks: ${counts.blocks} code blocks in ${readmes.join(', ')} typecheck; ${counts.run} run to completion, ${typecheckOnly} typechecked only (${counts.preamble} with a preamble of free names, ${counts.noRun} marked no-run)`,
  );
}
