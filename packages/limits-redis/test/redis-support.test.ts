import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  rawCommand,
  startCluster,
  startRedis,
  type TestCluster,
  type TestRedis,
} from './support/redis.js';

describe('the test Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });

  it('answers PING on its loopback port', async () => {
    expect(await rawCommand(redis.port, 'PING')).toBe('+PONG\r\n');
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
  });

  it('restarts empty on the same port after a stop', async () => {
    const client = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    client.on('error', () => {}); // reconnect attempts while the server is stopped
    try {
      await client.set('k', 'v');
      await redis.stop();
      expect(redis.running).toBe(false);
      await expect(rawCommand(redis.port, 'PING')).rejects.toThrow();
      await redis.restart();
      expect(redis.running).toBe(true);
      expect(await rawCommand(redis.port, 'PING')).toBe('+PONG\r\n');
      expect(await client.get('k')).toBeNull();
    } finally {
      client.disconnect();
    }
  });
});

describe('the test Redis Cluster', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('serves keys from three masters through an ioredis Cluster client', async () => {
    expect(cluster.nodes).toHaveLength(3);
    const client = new Cluster(cluster.nodes);
    try {
      for (let i = 0; i < 20; i++) await client.set(`key-${i}`, String(i));
      expect(await client.get('key-7')).toBe('7');
      expect(client.nodes('master')).toHaveLength(3);
    } finally {
      client.disconnect();
    }
  });
});

describe('scripts/ensure-redis.mjs', () => {
  const script = fileURLToPath(new URL('../../../scripts/ensure-redis.mjs', import.meta.url));

  it('exits 0 when redis-server and redis-cli are on PATH', () => {
    expect(spawnSync(process.execPath, [script]).status).toBe(0);
  });

  it('says what to install and exits 1 when redis-server is missing and it may not install', () => {
    const bin = mkdtempSync(join(tmpdir(), 'limits-no-redis-'));
    try {
      const r = spawnSync(process.execPath, [script], {
        env: { PATH: bin, LIMITS_REDIS_NO_INSTALL: '1' },
        encoding: 'utf8',
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/need `redis-server` and `redis-cli`/);
      expect(r.stderr).toMatch(/apt-get install -y redis-server/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
