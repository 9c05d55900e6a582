// The shape rules of the source tree (run by `check`, so by `npm test` and CI), each a failure when broken:
//
// 1. No import cycle in any package's src/ (relative imports, type-only ones included: a cycle of types
//    still means two files that cannot be read apart). The same graph `madge --circular` sees; this
//    script needs no dependency, so the check runs offline and in about 50 ms.
// 2. Another library's internals are touched in one adapter file each (STYLE.md): the patterns in
//    INTERNALS may appear only in the file named for them.
// 3. The layers of ARCHITECTURE.md hold: for each table after a `<!-- layers: packages/<pkg>/src -->`
//    comment, every source file of that folder belongs to a row (a top-level file, or a folder
//    `name/` holding it), and imports from other rows only the ones its "may import" column names
//    (`everything`, or backticked names; `(nothing)`).
//
//   node scripts/check-structure.mjs           check, print a one-line summary per package
//   node scripts/check-structure.mjs --self-test   also prove the cycle finder finds a planted cycle
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/**
 * Patterns that reach into another library's internals, and the one file allowed to use each.
 * eventemitter3 keeps its listeners in `_events`; opossum's rolling counts live in `status.window`.
 */
const INTERNALS = [
  {
    what: "eventemitter3's _events",
    pattern: /\b_events\b/,
    allowed: 'packages/limits-core/src/limiter/emit.ts',
  },
  {
    what: "opossum's status window",
    pattern: /\.window\b|\bstatus\s*\.\s*window\b/,
    allowed: 'packages/limits-breaker/src/OpossumCircuit.ts',
  },
];

/** Every .ts file under `dir` (no declaration files). */
function sources(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** Code without comments and string contents other than import specifiers (good enough for the patterns). */
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

const IMPORT =
  /(?:^|[\s;])(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]/gm;

/** The relative imports of `file`, resolved to .ts paths. */
function importsOf(file, text) {
  const out = [];
  for (const m of stripComments(text).matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec.startsWith('.')) continue;
    const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
    out.push(target);
  }
  return out;
}

/** Cycles in `graph` (Map file → files), each as a list of files, found by Tarjan's algorithm. */
export function findCycles(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const visit = (v) => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), indices.get(w)));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const selfLoop = component.length === 1 && (graph.get(v) ?? []).includes(v);
      if (component.length > 1 || selfLoop) cycles.push(component.reverse());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return cycles;
}

function selfTest() {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  const cycles = findCycles(graph);
  if (cycles.length !== 1 || cycles[0].length !== 3) {
    throw new Error(`self-test: expected one 3-file cycle, got ${JSON.stringify(cycles)}`);
  }
  if (
    findCycles(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ).length !== 0
  ) {
    throw new Error('self-test: found a cycle in an acyclic graph');
  }
  const parsed = importsOf(
    '/x/a.ts',
    "import type { A } from './b.js';\nexport { c } from '../c.js';\n// import { d } from './d.js';\n",
  );
  if (parsed.join() !== ['/x/b.ts', '/c.ts'].join()) {
    throw new Error(`self-test: import parsing gave ${JSON.stringify(parsed)}`);
  }
  const layers = parseLayers(
    'x\n<!-- layers: packages/p/src -->\n\n| folder | may import |\n| --- | --- |\n| `index.ts` | everything |\n| `a/` | `b/` `c.ts` |\n| `b/` | (nothing) |\n',
  );
  const rows = layers.get('packages/p/src');
  if (
    rows?.get('index.ts') !== '*' ||
    [...(rows?.get('a/') ?? [])].join() !== 'b/,c.ts' ||
    rows?.get('b/')?.size !== 0
  ) {
    throw new Error(`self-test: layer parsing gave ${JSON.stringify([...(rows ?? [])])}`);
  }
  if (
    rowOf('packages/p/src', 'packages/p/src/a/x/y.ts') !== 'a/' ||
    rowOf('packages/p/src', 'packages/p/src/c.ts') !== 'c.ts'
  ) {
    throw new Error('self-test: rowOf');
  }
  console.log('check-structure self-test: ok');
}

/**
 * The layer tables of ARCHITECTURE.md: Map of package src dir (repo-relative) → Map of row name
 * (`index.ts`, `limiter/`) → allowed row names (a Set, or '*' for everything).
 */
export function parseLayers(text) {
  const layers = new Map();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^<!-- layers: (\S+) -->$/.exec(lines[i].trim());
    if (m === null) continue;
    const rows = new Map();
    let j = i + 1;
    while (j < lines.length && !lines[j].trim().startsWith('|')) j++;
    for (j += 2; j < lines.length && lines[j].trim().startsWith('|'); j++) {
      const cells = lines[j]
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim());
      const name = /`([^`]+)`/.exec(cells[0])?.[1];
      const allowedCell = cells[cells.length - 1];
      if (name === undefined) continue;
      const allowed =
        allowedCell === 'everything'
          ? '*'
          : new Set([...allowedCell.matchAll(/`([^`]+)`/g)].map((x) => x[1]));
      rows.set(name, allowed);
    }
    layers.set(m[1], rows);
  }
  return layers;
}

/** The row of `file` (repo-relative, inside `srcDir`): its top-level file name or `folder/`. */
export function rowOf(srcDir, file) {
  const rest = file.slice(srcDir.length + 1).split('/');
  return rest.length === 1 ? rest[0] : `${rest[0]}/`;
}

if (process.argv.includes('--self-test')) selfTest();

const layers = parseLayers(readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8'));

const problems = [];
const packagesDir = join(root, 'packages');
for (const pkg of readdirSync(packagesDir).sort()) {
  const src = join(packagesDir, pkg, 'src');
  let files;
  try {
    files = sources(src);
  } catch {
    continue; // a placeholder package without src/
  }
  const graph = new Map();
  let largest = { file: '', lines: 0 };
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const rel = relative(root, file).split('\\').join('/');
    graph.set(file, importsOf(file, text));
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > largest.lines) largest = { file: rel, lines };
    const code = stripComments(text);
    for (const rule of INTERNALS) {
      if (rel !== rule.allowed && rule.pattern.test(code)) {
        problems.push(`${rel}: touches ${rule.what}; only ${rule.allowed} may`);
      }
    }
  }
  const srcRel = `packages/${pkg}/src`;
  const rows = layers.get(srcRel);
  if (rows !== undefined) {
    for (const [file, imports] of graph) {
      const rel = relative(root, file).split('\\').join('/');
      const row = rowOf(srcRel, rel);
      const allowed = rows.get(row);
      if (allowed === undefined) {
        problems.push(`${rel}: its folder ${row} is not in ARCHITECTURE.md's layers of ${srcRel}`);
        continue;
      }
      if (allowed === '*') continue;
      for (const target of imports) {
        const targetRel = relative(root, target).split('\\').join('/');
        if (!targetRel.startsWith(`${srcRel}/`)) continue;
        const to = rowOf(srcRel, targetRel);
        if (to !== row && !allowed.has(to)) {
          problems.push(
            `${rel}: imports ${to} (${targetRel}); ARCHITECTURE.md lets ${row} import ${[...allowed].join(' ') || 'nothing'}`,
          );
        }
      }
    }
  }
  const cycles = findCycles(graph);
  for (const cycle of cycles) {
    const names = cycle.map((f) => relative(src, f).split('\\').join('/'));
    problems.push(`packages/${pkg}/src: import cycle ${[...names, names[0]].join(' → ')}`);
  }
  console.log(
    `${pkg}: ${files.length} files, ${cycles.length} import cycles, largest ${largest.file.replace(`packages/${pkg}/`, '')} (${largest.lines} lines)`,
  );
}
if (problems.length > 0) {
  console.error(`\ncheck-structure: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
