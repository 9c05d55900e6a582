/** ioredis connection states in which the client has lost a connection it had (or was closed). */
const LOST = new Set(['reconnecting', 'close', 'end']);

/**
 * @internal The error a call answers with at once when an ioredis client's `status` says its
 * connection is lost (`"reconnecting"`, `"close"`, `"end"`): a command sent then would wait in the
 * client's offline queue and run long after its caller was answered. `undefined` for any other
 * state: `"ready"`; `"wait"` (a `lazyConnect` client, which connects on its first command);
 * `"connecting"` or `"connect"` (the first connection on its way). Those calls go to the client,
 * bounded by the caller's timeout. A client without `status` is taken as connected.
 */
export function connectionLost(status: string | undefined): Error | undefined {
  if (status === undefined || !LOST.has(status)) return undefined;
  return new Error(`limits: Redis is not connected (client status "${status}")`);
}
