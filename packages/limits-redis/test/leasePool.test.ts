import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { Limiter } from 'limits-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type Lease,
  type RedisFailureEvent,
  RedisLeasePool,
  type RedisLeasePoolOptions,
  RedisUnavailableError,
} from '../src/index.js';
import { abortListeners, deferred, FakeClock, resources, waitFor } from './support/leasePool.js';
import { startRedis, type TestRedis } from './support/redis.js';

type Client = InstanceType<typeof Redis5>;
const clients = [
  { version: 'ioredis 5', make: (port: number) => quiet(new Redis5(port, '127.0.0.1')) },
  {
    version: 'ioredis 6',
    make: (port: number) => quiet(new Redis6(port, '127.0.0.1') as unknown as Client),
  },
];

/** The tests stop Redis on purpose: connection errors are expected, not worth a log line. */
function quiet(client: Client): Client {
  client.on('error', () => {});
  return client;
}

let server: TestRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.close();
});

describe.each(clients)('RedisLeasePool on a real Redis with $version', ({ make }) => {
  let redis: Client;
  let admin: Client;
  const open: RedisLeasePool[] = [];
  let n = 0;
  const pool = (o: Partial<RedisLeasePoolOptions> = {}, client = redis) => {
    const b = new RedisLeasePool(client, {
      name: `b${++n}-${Math.random().toString(36).slice(2)}`,
      limit: 2,
      onFailure: 'closed',
      ...o,
    });
    open.push(b);
    return b;
  };
  const leasesKey = (b: RedisLeasePool) => `limits:pool:{${b.name}}:leases`;
  const zcard = (b: RedisLeasePool) => admin.zcard(leasesKey(b));

  beforeAll(() => {
    redis = make(server.port);
    admin = make(server.port);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((b) => b.close()));
  });
  afterAll(() => {
    redis.disconnect();
    admin.disconnect();
  });

  it('grants leases up to the limit and refuses the next one with reason limit', async () => {
    const b = pool();
    const l1 = await b.acquire();
    const l2 = await b.acquire();
    expect(await zcard(b)).toBe(2);
    const refused = await b.acquire().catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'LIMIT_EXCEEDED', reason: 'at_limit' });
    expect(String(refused)).toContain('2/2 units in use');
    expect(await l1.release()).toBe(true);
    expect(await l1.release()).toBe(false); // the first release wins
    const l3 = await b.acquire();
    expect(await b.status()).toEqual({ used: 2, leases: 2, limit: 2 });
    await l2.release();
    await l3.release();
    expect(await admin.exists(leasesKey(b), `limits:pool:{${b.name}}:used`)).toBe(0);
  });

  it('counts a lease of cost 3 as three units', async () => {
    const b = pool({ limit: 4 });
    const heavy = await b.acquire({ cost: 3 });
    await expect(b.acquire({ cost: 2 })).rejects.toMatchObject({ reason: 'at_limit' });
    const light = await b.acquire();
    expect(await b.status()).toEqual({ used: 4, leases: 2, limit: 4 });
    await heavy.release();
    expect((await b.status()).used).toBe(1);
    await light.release();
  });

  it('wakes a waiter with the release message from another instance, not by polling', async () => {
    const other = make(server.port);
    try {
      const holder = pool({ limit: 1 });
      const shared = new RedisLeasePool(other, {
        name: holder.name,
        limit: 1,
        onFailure: 'closed',
        pollMs: 60_000,
        maxWaitMs: 10_000,
      });
      open.push(shared);
      const lease = await holder.acquire();
      const start = Date.now();
      const waiting = shared.acquire();
      await waitFor('the waiter to subscribe', async () => {
        const [, subs] = (await admin.pubsub(
          'NUMSUB',
          `limits:pool:{${holder.name}}:released`,
        )) as [string, number];
        return Number(subs) === 1;
      });
      expect(shared.waiting).toBe(1);
      await lease.release();
      const got = await waiting;
      expect(Date.now() - start).toBeLessThan(2_000); // the poll would take 60 s
      expect(got.backed).toBe(true);
      await got.release();
    } finally {
      other.disconnect();
    }
  });

  it('gets a lease from the fallback poll when no release message comes (a crashed holder expires)', async () => {
    const b = pool({ limit: 1, pollMs: 50, maxWaitMs: 5_000 });
    // A holder that died without releasing: its lease expires in 300 ms (Redis time), silently.
    const [sec, usec] = (await admin.time()) as unknown as [string, string];
    const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    await admin.zadd(leasesKey(b), nowMs + 300, 'dead:1#1');
    await admin.set(`limits:pool:{${b.name}}:used`, 1);
    await expect(b.acquire({ maxWaitMs: 0 })).rejects.toMatchObject({ reason: 'at_limit' }); // it counts
    const lease = await b.acquire({ maxWaitMs: 5_000 });
    expect(await admin.zscore(leasesKey(b), 'dead:1#1')).toBeNull();
    expect(await zcard(b)).toBe(1);
    await lease.release();
  });

  it('serves the callers of one instance in arrival order: a newcomer queues behind the waiters', async () => {
    const b = pool({ limit: 1, maxWaitMs: 10_000, pollMs: 60_000 });
    const lease = await b.acquire();
    const order: number[] = [];
    const served = (n: number) => (l: Lease) => {
      order.push(n);
      return l;
    };
    const first = b.acquire().then(served(1));
    await waitFor('the first waiter', () => b.waiting === 1);
    const second = b.acquire().then(served(2));
    expect(b.waiting).toBe(2); // queued at once, without a Redis call
    await lease.release();
    const l1 = await first;
    expect(order).toEqual([1]);
    await l1.release();
    await (await second).release();
    expect(order).toEqual([1, 2]);
  });

  it('runs its waits, polls and renewals on the injected clock, and keeps no timer once idle', async () => {
    const clock = new FakeClock();
    // timeoutMs far away: advancing the fake clock must not time out a real Redis call in flight.
    const b = pool({
      limit: 1,
      maxWaitMs: 1_000,
      pollMs: 300,
      leaseTtlMs: 900,
      timeoutMs: 1e9,
      clock,
    });
    const lease = await b.acquire();
    expect(clock.pending).toEqual([300]); // the renewal (leaseTtlMs / 3)
    const waiting = b.acquire().catch((e: unknown) => e);
    await waitFor('the waiter', () => b.waiting === 1);
    await waitFor('the refused attempt to end', () => clock.pending.length === 3);
    expect(clock.pending).toEqual([300, 300, 1_000]); // renewal, poll, the wait's end
    await clock.advance(999);
    expect(b.waiting).toBe(1);
    await clock.advance(1);
    expect(await waiting).toMatchObject({ reason: 'expired' });
    expect(b.waiting).toBe(0);
    await lease.release();
    // Only the timeouts of Redis calls still in flight may remain, until their replies come.
    await waitFor('no timer left', () => clock.pending.length === 0);
  });

  it('makes one attempt per unit a release frees here: its own release message does not wake a second waiter', async () => {
    const b = pool({ limit: 1, maxWaitMs: 10_000, pollMs: 60_000 });
    const lease = await b.acquire();
    const first = b.acquire();
    const second = b.acquire();
    await waitFor('the subscriber', async () => {
      const [, subs] = (await admin.pubsub('NUMSUB', `limits:pool:{${b.name}}:released`)) as [
        string,
        number,
      ];
      return Number(subs) === 1;
    });
    const scriptCalls = async () =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    const before = await scriptCalls();
    await lease.release();
    const l1 = await first;
    await new Promise((r) => setTimeout(r, 100)); // room for a wrong wake-up by the message
    expect((await scriptCalls()) - before).toBe(2); // the release, then the first waiter's acquire
    expect(b.waiting).toBe(1);
    await l1.release();
    await (await second).release();
  });

  it("wakes this instance's waiter after its release, even when the release is sent again after NOSCRIPT", async () => {
    const b = pool({ limit: 1, maxWaitMs: 10_000, pollMs: 60_000 });
    const lease = await b.acquire();
    const waiting = b.acquire();
    await waitFor('the waiter', () => b.waiting === 1);
    await admin.script('FLUSH'); // the release goes EVALSHA → NOSCRIPT → EVAL
    const start = Date.now();
    await lease.release();
    await (await waiting).release();
    expect(Date.now() - start).toBeLessThan(2_000); // the poll would take 60 s
  });

  it('hands every freed unit to a waiter, even when two releases land during one attempt', async () => {
    const b = pool({ limit: 2, maxWaitMs: 10_000, pollMs: 60_000 });
    const held = [await b.acquire(), await b.acquire()];
    const waiters = [b.acquire(), b.acquire()];
    await waitFor('two waiters', () => b.waiting === 2);
    const start = Date.now();
    await Promise.all(held.map((l) => l.release()));
    const got = await Promise.all(waiters);
    expect(Date.now() - start).toBeLessThan(2_000); // the poll would take 60 s
    await Promise.all(got.map((l) => l.release()));
  });

  it('leaves the wait at once on abort, with no listener, timer or waiter left behind', async () => {
    const b = pool({ limit: 1, maxWaitMs: 60_000 });
    const lease = await b.acquire();
    const controller = new AbortController();
    const waiting = b.acquire({ signal: controller.signal });
    await waitFor('the waiter to queue', () => b.waiting === 1);
    const start = Date.now();
    controller.abort(new Error('client went away'));
    const error = await waiting.catch((e: unknown) => e);
    expect(Date.now() - start).toBeLessThan(100);
    expect(error).toMatchObject({ reason: 'aborted', cause: new Error('client went away') });
    expect(b.waiting).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
    await lease.release();
    expect(await zcard(b)).toBe(0);
  });

  it('refuses with reason expired when the pool stays full for the whole wait', async () => {
    const b = pool({ limit: 1 });
    const lease = await b.acquire();
    const start = Date.now();
    await expect(b.acquire({ maxWaitMs: 150 })).rejects.toMatchObject({ reason: 'expired' });
    expect(Date.now() - start).toBeGreaterThanOrEqual(140);
    expect(Date.now() - start).toBeLessThan(600);
    expect(b.waiting).toBe(0);
    await lease.release();
  });

  it("renews a long holder's lease past its TTL, and stops renewing on release", async () => {
    const b = pool({ limit: 1, leaseTtlMs: 200 });
    const renewals: number[] = [];
    const lease = await b.acquire();
    const first = Number(await admin.zscore(leasesKey(b), `${lease.id}#1`));
    await new Promise((r) => setTimeout(r, 700)); // 3.5 TTLs of work
    const later = Number(await admin.zscore(leasesKey(b), `${lease.id}#1`));
    renewals.push(later - first);
    expect(later).toBeGreaterThan(first + 300);
    await expect(b.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
    expect(lease.lost).toBe(false);
    await lease.release();
    expect(b.held).toBe(0);
    expect(await zcard(b)).toBe(0);
  });

  it('reports a lease found gone at renewal as lost and aborts its signal', async () => {
    const b = pool({ limit: 1, leaseTtlMs: 300, renewEveryMs: 50 });
    const lost: unknown[] = [];
    b.on('leaseLost', (e) => lost.push(e));
    const lease = await b.acquire();
    const signal = lease.signal;
    await admin.zrem(leasesKey(b), `${lease.id}#1`); // e.g. expired during a long outage
    await waitFor('the renewal to notice', () => lease.lost);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe('LeaseLostError');
    expect(lost).toEqual([{ id: lease.id, cost: 1, heldMs: expect.any(Number) }]);
    expect(b.held).toBe(0);
    expect(await lease.release()).toBe(false);
  });

  it('keeps working through SCRIPT FLUSH (reloads on NOSCRIPT)', async () => {
    const b = pool({ limit: 2 });
    const l1 = await b.acquire();
    await admin.script('FLUSH');
    expect(await l1.release()).toBe(true);
    await admin.script('FLUSH');
    const l2 = await b.acquire();
    expect(await zcard(b)).toBe(1);
    await admin.script('FLUSH');
    await l2.release();
    expect(await zcard(b)).toBe(0);
  });

  it('answers within the timeout when Redis is slow (onFailure closed), and gives back a grant that arrives late', async () => {
    const b = pool({ limit: 2, timeoutMs: 100 });
    const failures: RedisFailureEvent[] = [];
    b.on('redisFailure', (e) => failures.push(e));
    const listener = admin.duplicate();
    const released: string[] = [];
    listener.on('message', (_channel: string, units: string) => released.push(units));
    await listener.subscribe(`limits:pool:{${b.name}}:released`);
    await admin.call('CLIENT', 'PAUSE', '400', 'WRITE');
    const start = Date.now();
    const error = await b.acquire().catch((e: unknown) => e);
    const elapsed = Date.now() - start;
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(error).toMatchObject({
      code: 'REDIS_UNAVAILABLE',
      operation: 'acquire',
      timedOut: true,
    });
    expect(elapsed).toBeGreaterThanOrEqual(95);
    expect(elapsed).toBeLessThan(400);
    expect(failures).toMatchObject([{ operation: 'acquire', policy: 'closed', timedOut: true }]);
    // The script ran once the pause ended and granted a lease nobody holds: it is given back.
    await waitFor('the late grant to be released', () => released.length === 1, 3_000);
    expect(released).toEqual(['1']);
    expect(await zcard(b)).toBe(0);
    listener.disconnect();
    const lease = await b.acquire();
    expect(lease.backed).toBe(true);
    await lease.release();
  });

  it('retries a release that failed while the connection was down, long before the TTL', async () => {
    const client = make(server.port);
    try {
      const b = pool({ limit: 2, leaseTtlMs: 60_000, renewEveryMs: 50 }, client);
      const failures: string[] = [];
      b.on('redisFailure', (e) => failures.push(e.operation));
      const lease = await b.acquire();
      const id = await client.client('ID');
      await admin.client('KILL', 'ID', String(id));
      await waitFor('the client to notice', () => client.status !== 'ready');
      expect(await lease.release()).toBe(false); // failed at once: not connected
      expect(failures).toEqual(['release']);
      expect(await zcard(b)).toBe(1);
      // Reconnected, the pool's timer releases it: the fleet gets the unit back now, not in 60 s.
      await waitFor('the retried release', async () => (await zcard(b)) === 0, 3_000);
    } finally {
      client.disconnect();
    }
  });

  it('completes a wrapped permit once with ignore at the end of a using block', async () => {
    const b = pool({ limit: 2 });
    const limiter = new Limiter({ limit: 2 });
    const outcomes: string[] = [];
    limiter.on('release', (e) => outcomes.push(e.outcome));
    const db = b.wrap(limiter);
    {
      using permit = await db.acquire();
      expect(permit.released).toBe(false);
      expect(await zcard(b)).toBe(1);
    }
    const other = await db.acquire();
    other.failure();
    other.ignore();
    expect(outcomes).toEqual(['ignore', 'failure']);
    await waitFor('both leases back', async () => (await zcard(b)) === 0);
  });

  it('runs a task under a lease and releases it when the task settles, even when it throws', async () => {
    const b = pool({ limit: 1 });
    expect(await b.run(async () => (await zcard(b)) as number)).toBe(1);
    await waitFor('the release (in the background)', async () => (await zcard(b)) === 0);
    await expect(
      b.run(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await waitFor('the release', async () => (await zcard(b)) === 0);
  });

  it('emits acquire, release and reject events with the fleet numbers', async () => {
    const b = pool({ limit: 1 });
    const events: [string, unknown][] = [];
    b.on('acquire', (e) => events.push(['acquire', e]));
    b.on('release', (e) => events.push(['release', e]));
    b.on('reject', (e) => events.push(['reject', e]));
    const lease = await b.acquire();
    await b.acquire().catch(() => {});
    await lease.release();
    expect(events).toEqual([
      [
        'acquire',
        { id: lease.id, cost: 1, backed: true, used: 1, limit: 1, waitedMs: expect.any(Number) },
      ],
      ['reject', { reason: 'at_limit', cost: 1, used: 1, limit: 1 }],
      ['release', { id: lease.id, cost: 1, heldMs: expect.any(Number), held: true }],
    ]);
  });

  it('keeps working when an event listener throws: the error goes to the error event', async () => {
    const b = pool({ limit: 1 });
    const errors: unknown[] = [];
    b.on('acquire', () => {
      throw new Error('listener bug');
    });
    b.on('error', (e) => errors.push(e));
    const lease = await b.acquire();
    expect(lease.backed).toBe(true);
    expect(errors).toEqual([new Error('listener bug')]);
    expect(await lease.release()).toBe(true);
  });

  it('close() rejects waiters, releases held leases, stops every timer and closes its subscriber', async () => {
    const before = resources();
    const b = pool({ limit: 1, maxWaitMs: 60_000, pollMs: 20 });
    const lease = await b.acquire();
    const waiting = b.acquire();
    const refused = waiting.catch((e: unknown) => e);
    await waitFor('the subscriber', async () => {
      const [, subs] = (await admin.pubsub('NUMSUB', `limits:pool:{${b.name}}:released`)) as [
        string,
        number,
      ];
      return Number(subs) === 1;
    });
    await b.close();
    expect(await refused).toMatchObject({ reason: 'closed' });
    expect(lease.released).toBe(true);
    expect(await zcard(b)).toBe(0);
    await waitFor('the subscriber to leave', async () => {
      const [, subs] = (await admin.pubsub('NUMSUB', `limits:pool:{${b.name}}:released`)) as [
        string,
        number,
      ];
      return Number(subs) === 0;
    });
    await waitFor('timers and sockets back to where they were', () => {
      const after = resources();
      return (
        (after.Timeout ?? 0) <= (before.Timeout ?? 0) &&
        (after.TCPSocketWrap ?? 0) <= (before.TCPSocketWrap ?? 0)
      );
    });
    expect(b.held).toBe(0);
    expect(b.waiting).toBe(0);
  });

  it('close() refuses an acquire whose first Redis call is still in flight, and gives its grant back', async () => {
    const b = pool({ limit: 2, timeoutMs: 2_000 });
    await admin.call('CLIENT', 'PAUSE', '300', 'WRITE');
    const pending = b.acquire().catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50)); // the script is parked by the pause
    const closing = b.close();
    expect(await pending).toMatchObject({ reason: 'closed' });
    await closing; // resolves once the grant that came back after the pause is released
    expect(await zcard(b)).toBe(0);
  });

  describe('wrapped around a local Limiter', () => {
    it('takes the local permit first: a process never has more lease requests than its local limit', async () => {
      const b = pool({ limit: 10 });
      const db = b.wrap(new Limiter({ limit: 2, maxQueued: 10 }));
      let leaseRequests = 0;
      b.on('acquire', () => leaseRequests++);
      const gates = [deferred(), deferred(), deferred(), deferred(), deferred()];
      const runs = gates.map((g) => db.run(() => g.promise));
      await waitFor('two calls to hold leases', () => leaseRequests === 2);
      await new Promise((r) => setTimeout(r, 50)); // room for a wrong third request
      expect(await zcard(b)).toBe(2);
      expect(db.limiter.inflight).toBe(2);
      expect(db.limiter.queued).toBe(3);
      expect(leaseRequests).toBe(2);
      for (const g of gates) g.resolve();
      await Promise.all(runs);
      expect(leaseRequests).toBe(5);
      await waitFor('every lease back', async () => (await zcard(b)) === 0);
      expect(db.limiter.inflight).toBe(0);
    });

    it('returns the local permit at once when the lease is refused', async () => {
      const b = pool({ limit: 1 });
      const other = await b.acquire();
      const db = b.wrap(new Limiter({ limit: 5 }));
      await expect(db.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
      expect(db.limiter.inflight).toBe(0);
      await expect(db.run(() => 'never')).rejects.toMatchObject({ reason: 'at_limit' });
      expect(db.limiter.inflight).toBe(0);
      await other.release();
    });

    it('completes both with one outcome: the permit reports it, the lease goes back to the fleet', async () => {
      const b = pool({ limit: 3 });
      const limiter = new Limiter({ limit: 3 });
      const outcomes: string[] = [];
      limiter.on('release', (e) => outcomes.push(e.outcome));
      const db = b.wrap(limiter);
      const p = await db.acquire({ timeoutMs: 1_000 });
      expect(p.lease.backed).toBe(true);
      expect(limiter.inflight).toBe(1);
      expect(await zcard(b)).toBe(1);
      p.dropped();
      p.success(); // ignored: the first outcome wins
      expect(outcomes).toEqual(['dropped']);
      expect(p.released).toBe(true);
      await waitFor('the lease back', async () => (await zcard(b)) === 0);
    });

    it('bounds the wait for the lease by what is left of the call timeoutMs', async () => {
      const b = pool({ limit: 1, maxWaitMs: 60_000 });
      const other = await b.acquire();
      const db = b.wrap(new Limiter({ limit: 5 }));
      const start = Date.now();
      await expect(db.acquire({ timeoutMs: 150 })).rejects.toMatchObject({ reason: 'expired' });
      expect(Date.now() - start).toBeLessThan(600);
      const started = Date.now();
      await expect(db.run(() => 'never', { timeoutMs: 150 })).rejects.toMatchObject({
        name: 'TimeoutError',
      });
      expect(Date.now() - started).toBeLessThan(600);
      expect(b.waiting).toBe(0);
      await other.release();
      await waitFor('the limiter to drain', () => db.limiter.inflight === 0);
    });
  });
});

describe.each(clients)('Redis stopped mid-run ($version)', ({ make }) => {
  it('reports failed renewals, and the lease as lost when Redis comes back without it', async () => {
    const redis = make(server.port);
    const b = new RedisLeasePool(redis, {
      name: `renew-${Math.random().toString(36).slice(2)}`,
      limit: 2,
      onFailure: 'closed',
      leaseTtlMs: 300,
      renewEveryMs: 50,
      timeoutMs: 100,
    });
    const failures: string[] = [];
    const lost: string[] = [];
    b.on('redisFailure', (e) => failures.push(e.operation));
    b.on('leaseLost', (e) => lost.push(e.id));
    try {
      const lease = await b.acquire();
      await server.stop();
      await waitFor('a failed renewal', () => failures.includes('renew'));
      expect(lease.lost).toBe(false); // not known yet: Redis cannot say
      await server.restart(); // empty: the lease is gone
      await waitFor('the loss to be noticed', () => lost.length === 1, 10_000);
      expect(lost).toEqual([lease.id]);
      expect(lease.lost).toBe(true);
      expect(lease.signal.aborted).toBe(true);
      expect(b.held).toBe(0);
    } finally {
      await b.close();
      redis.disconnect();
    }
  });

  it('with onFailure closed a call is rejected within the timeout, with open it passes, both emit; both recover after a restart', async () => {
    const redis = make(server.port);
    const name = `outage-${Math.random().toString(36).slice(2)}`;
    const common = { name, limit: 5, timeoutMs: 150, pollMs: 60_000 } as const;
    const closed = new RedisLeasePool(redis, { ...common, onFailure: 'closed' });
    const open = new RedisLeasePool(redis, { ...common, onFailure: 'open' });
    const events: { policy: string; operation: string }[] = [];
    const recovered: string[] = [];
    for (const b of [closed, open]) {
      b.on('redisFailure', (e) => events.push({ policy: e.policy, operation: e.operation }));
      b.on('redisRecovered', () => recovered.push(b.onFailure));
    }
    try {
      const held: Lease = await closed.acquire();
      // Callers waiting for a lease when Redis goes away get the failure policy's answer at once.
      const blockers = await Promise.all([1, 2, 3, 4].map(() => open.acquire())); // 5/5 with `held`
      const waitOpen = [1, 2, 3].map(() => open.acquire({ maxWaitMs: 30_000 }));
      await waitFor('three waiters', () => open.waiting === 3);
      await server.stop();
      const waited = Date.now();
      const passedWaiting = await Promise.all(waitOpen);
      expect(Date.now() - waited).toBeLessThan(1_000);
      expect(passedWaiting.map((l) => l.backed)).toEqual([false, false, false]);
      for (const l of [...passedWaiting, ...blockers]) await l.release();

      let start = Date.now();
      const error = await closed.acquire().catch((e: unknown) => e);
      expect(Date.now() - start).toBeLessThan(400);
      expect(error).toBeInstanceOf(RedisUnavailableError);

      start = Date.now();
      const passed = await open.acquire();
      expect(Date.now() - start).toBeLessThan(400);
      expect(passed.backed).toBe(false);
      expect(await passed.release()).toBe(false);

      // Known down: calls do not each wait out the timeout; one probe at a time goes to Redis.
      const before = events.length;
      const timed = async <T>(p: () => Promise<T>) => {
        const t = Date.now();
        const value = await p().catch((e: unknown) => e);
        return { value, ms: Date.now() - t };
      };
      const [burst, refusals] = await Promise.all([
        Promise.all(Array.from({ length: 10 }, () => timed(() => open.acquire()))),
        Promise.all(Array.from({ length: 10 }, () => timed(() => closed.acquire()))),
      ]);
      for (const calls of [burst, refusals]) {
        expect(calls.filter((c) => c.ms >= 120).length).toBeLessThanOrEqual(1); // the probe
        expect(Math.max(...calls.map((c) => c.ms))).toBeLessThan(400);
      }
      expect(burst.every((c) => (c.value as Lease).backed === false)).toBe(true);
      expect(refusals.every((c) => c.value instanceof RedisUnavailableError)).toBe(true);
      expect(events.length - before).toBe(20); // an event each time
      for (const c of burst) await (c.value as Lease).release();

      // A release during the outage neither throws nor hangs.
      start = Date.now();
      expect(await held.release()).toBe(false);
      expect(Date.now() - start).toBeLessThan(400);

      expect(events).toEqual(
        expect.arrayContaining([
          { policy: 'closed', operation: 'acquire' },
          { policy: 'open', operation: 'acquire' },
          { policy: 'closed', operation: 'release' },
        ]),
      );

      await server.restart();
      // Same process, same client: both recover once ioredis has reconnected.
      for (const b of [closed, open]) {
        let lease: Lease | undefined;
        await waitFor(
          `${b.onFailure} to recover`,
          async () => {
            lease = await b.acquire().catch(() => undefined);
            return lease?.backed === true;
          },
          10_000,
        );
        // Acquires that timed out during the outage and ran when ioredis reconnected are given back.
        await waitFor('late grants to be given back', async () => (await b.status()).used === 1);
        await lease?.release();
      }
      expect(recovered.sort()).toEqual(['closed', 'open']);
      await waitFor('every lease back', async () => (await closed.status()).used === 0);
    } finally {
      await closed.close();
      await open.close();
      redis.disconnect();
    }
  });
});
