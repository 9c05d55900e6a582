// Typechecks every TypeScript / JavaScript code block of README.md and packages/*/README.md, so the
// docs cannot rot (run by `check`, so by `npm test`). Needs the packages built: blocks import
// `limits-core` and `limits-breaker` the way a user does, through their published .d.ts files.
//
// Which blocks: fences tagged `ts`, `typescript`, `js`, `mjs` or `javascript`. Other tags (`sh`, `text`)
// are not checked. Every such block must typecheck on its own, as a module, under the repository's
// strict settings (unused names are allowed: a snippet may declare what it shows).
//
// Free variables: a snippet may use names it does not define (`API`, `cachedUser`, `search`). Declare them
// in an HTML comment right before the fence (blank lines between are allowed); the comment is not
// rendered on GitHub or npm, and its text is put before the block:
//
//     <!-- preamble: declare const API: string; declare function cachedUser(id: string): unknown; -->
//     ```ts
//     ...
//     ```
//
// A preamble may span several lines. Keep preambles to declarations: the block itself is the example.
// A `js` block is checked as an .mjs file (`// @ts-check`), so its preamble must be JavaScript (JSDoc types:
// `/** @type {string} */ const API = '';`), not `declare`.
// Errors are reported as README path:line.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const readmes = [
  'README.md',
  ...readdirSync(join(root, 'packages'))
    .map((p) => join('packages', p, 'README.md'))
    .filter((p) => {
      try {
        readFileSync(join(root, p));
        return true;
      } catch {
        return false;
      }
    }),
];
const checked = new Set(['ts', 'typescript', 'js', 'mjs', 'javascript']);

/** Every checked block of one README: its first code line (1-based), tag, preamble and code. */
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
      blocks.push({
        line: i + 2,
        js: tag.toLowerCase() !== 'ts' && tag.toLowerCase() !== 'typescript',
        preamble: preambleBefore(lines, i),
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

/** The text of a `<!-- preamble: ... -->` comment that ends right before line `fence` (blank lines skipped). */
function preambleBefore(lines, fence) {
  let j = fence - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0 || !lines[j].trimEnd().endsWith('-->')) return '';
  let k = j;
  while (k >= 0 && !lines[k].includes('<!--')) k--;
  const comment = lines
    .slice(k, j + 1)
    .join('\n')
    .replace(/^[\s\S]*?<!--/, '')
    .replace(/-->\s*$/, '');
  const match = /^\s*preamble:([\s\S]*)$/.exec(comment);
  return match === null ? '' : match[1].trim();
}

// The blocks go into a folder under examples/, whose node_modules resolve the workspace packages. A
// package that examples/ does not depend on (limits-redis: its blocks import ioredis) has its README's
// blocks checked in a folder inside the package instead, where its own dependencies and its own name
// (a self-reference through its `exports`) resolve.
const groups = new Map(); // folder → README paths
for (const readme of readmes) {
  if (blocksOf(readme).length === 0) continue;
  const pkg = /^packages[\\/]([^\\/]+)[\\/]README\.md$/.exec(readme)?.[1];
  const viaExamples = pkg === undefined || existsSync(join(root, 'examples', 'node_modules', pkg));
  const dir = viaExamples
    ? join(root, 'examples', '.readme-blocks')
    : join(root, 'packages', pkg, '.readme-blocks');
  if (!groups.has(dir)) groups.set(dir, []);
  groups.get(dir).push(readme);
}
let count = 0;
for (const [dir, group] of groups) checkGroup(dir, group);

/** Typechecks the blocks of `group` (README paths) in the folder `dir`, removed afterwards. */
function checkGroup(dir, group) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const origin = new Map(); // file name → { readme, line, preambleLines }
  try {
    for (const readme of group) {
      for (const block of blocksOf(readme)) {
        const name = `${readme.replaceAll(/[\\/]/g, '_').replace(/\.md$/, '')}_L${block.line}.${block.js ? 'mjs' : 'ts'}`;
        const head = [block.js ? '// @ts-check' : '', block.preamble].filter(Boolean).join('\n');
        const preambleLines = head === '' ? 0 : head.split('\n').length;
        writeFileSync(
          join(dir, name),
          `${head}${head === '' ? '' : '\n'}${block.code}\nexport {};\n`,
        );
        origin.set(name, { readme, line: block.line, preambleLines });
        count++;
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
          noEmit: true,
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
      const mapped = out.replace(/^([^\s(]+)\((\d+),(\d+)\)/gm, (all, file, line, col) => {
        const o = origin.get(file.split(/[\\/]/).pop());
        if (o === undefined) return all;
        const inBlock = Number(line) - o.preambleLines;
        return inBlock >= 1
          ? `${o.readme}:${o.line + inBlock - 1}:${col}`
          : `${o.readme}:${o.line - 1} (the preamble before the block)`;
      });
      console.error(`check-readme-blocks: README code blocks that do not typecheck:\n${mapped}`);
      process.exitCode = 1;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (process.exitCode !== 1) {
  console.log(
    `check-readme-blocks: ${count} code blocks in ${readmes.map((r) => relative(root, join(root, r))).join(', ')} typecheck`,
  );
}
