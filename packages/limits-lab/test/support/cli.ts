import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type CliIo, main } from '../../src/cli/main.js';

/** The repository's root (the examples' paths are relative to it). */
export const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../', import.meta.url));
const BIN = fileURLToPath(new URL('../../dist/cli/bin.js', import.meta.url));

/** Runs the CLI in this process; resolves with its exit code and what it printed. */
export async function cli(
  args: string[],
  cwd = ROOT,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    cwd,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/** Builds the package (the built executable imports limits-core's build, as a user's would). */
export function build(): void {
  execFileSync(
    process.execPath,
    [
      fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url)),
      '-p',
      'tsconfig.build.json',
    ],
    {
      cwd: PACKAGE,
      stdio: 'inherit',
    },
  );
}

/** Runs the built `limits-lab` executable as a child process. */
export function bin(
  args: string[],
  cwd = ROOT,
): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
