/** What a report says about the run it shows (nothing that changes between two runs of the same input). */
export interface RunInfo {
  /** A title: the model's name, or the trace's file name. */
  title: string;
  /** The run's seed. */
  seed: number;
  /** `open loop`, or `closed loop, N clients`. */
  loop: string;
}
