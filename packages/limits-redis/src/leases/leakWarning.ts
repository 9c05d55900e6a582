/** Pools that have warned. */
const warned = new WeakSet<object>();

/**
 * @internal Emits the process warning about a lease of `pool` that was garbage-collected before
 * `release()` (`LIMITS_LEASE_LEAK`, as limits-core's `LIMITS_PERMIT_LEAK`), once per pool.
 */
export function warnLeakedLease(pool: { readonly name: string }): void {
  if (warned.has(pool)) return;
  warned.add(pool);
  try {
    process.emitWarning(
      `limits: a lease of pool "${pool.name}" was garbage-collected before release() was ` +
        'called; its units were given back to the fleet. Listen to the pool\'s "leak" event ' +
        'to count them. (Reported once per pool.)',
      { code: 'LIMITS_LEASE_LEAK', type: 'LimitsWarning' },
    );
  } catch {
    // A warning that cannot be emitted must not stop the reclaim.
  }
}
