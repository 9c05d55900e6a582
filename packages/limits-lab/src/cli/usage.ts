/** The CLI's `--help` text. */
export const USAGE = `limits-lab: compare limiter configurations on a modelled or recorded downstream, offline.

Usage:
  limits-lab model <model.json> --config <spec> [--config <spec>...] [options]
  limits-lab replay <trace> --config <spec> [...] [--open-loop | --closed-loop N] [--spike FROM-TO] [options]

Configurations (--config, repeatable):
  fixed:40                          a fixed limit of 40
  vegas | gradient | aimd           an adaptive algorithm with its defaults
  vegas:maxLimit=200,smoothing=0.5  an algorithm's options, and the limiter's: maxQueued=100,
                                    maxQueueWaitMs=500, queueOrder=lifo, probeSlots=2, shedding=on,
                                    deadline=true (admit by each request's budget)
  name=vegas:maxQueued=50           a name for the table
  limiter.json                      a JSON file of Limiter options ({"algorithm": {"type": "vegas"}, ...})
  algorithm.mjs                     a JS module exporting a limit algorithm, its class or a factory

Options:
  --seed N            the run's seed, an integer (default 1): same input and seed, same output
  --json              print JSON instead of the table
  --out FILE          write a report: FILE.html (table and timelines side by side) or FILE.svg
  --tune SPACE        search a space: vegas:maxLimit=50|100|200,maxQueued=0..200 (lists: a grid;
                      lo..hi ranges: a seeded random search)
  --objective TEXT    what --tune looks for (default "max goodput"): "max goodput, p99<=500"
  --trials N          candidates --tune runs (default: the grid, at most 100; 100 for a random search)
  --format F          replay: the trace's format, jsonl, csv or har (default: from its extension)
  --open-loop         replay: send each request at its recorded time (the default)
  --closed-loop N     replay: N clients, each sending its next request when the previous ends
  --think-ms MS       with --closed-loop: a client's pause between requests (default 0)
  --spike FROM-TO     replay: a span (ms) to report the recovery after (repeatable)
  -h, --help          this text

Exit codes: 0 done, 1 a run failed, 2 a bad command, flag, configuration or input file.
`;
