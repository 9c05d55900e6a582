#!/usr/bin/env node
// The `limits-lab` executable: see cli/usage.ts, or run it with --help.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  cwd: process.cwd(),
});
