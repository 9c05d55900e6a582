/** Budgets that have warned. */
const warned = new WeakSet<object>();

/**
 * @internal Emits the process warning about a lease of `budget` that was garbage-collected before
 * `release()` (`LIMITS_LEASE_LEAK`, as limits-core's `LIMITS_PERMIT_LEAK`), once per budget.
 */
export function warnLeakedLease(budget: { readonly name: string }): void {
  if (warned.has(budget)) return;
  warned.add(budget);
  try {
    process.emitWarning(
      `limits: a lease of budget "${budget.name}" was garbage-collected before release() was ` +
        'called; its units were given back to the fleet. Listen to the budget\'s "leak" event ' +
        'to count them. (Reported once per budget.)',
      { code: 'LIMITS_LEASE_LEAK', type: 'LimitsWarning' },
    );
  } catch {
    // A warning that cannot be emitted must not stop the reclaim.
  }
}
