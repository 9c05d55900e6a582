/**
 * A small gRPC service for the tests, on a real grpc-js server at 127.0.0.1: one method of each
 * kind, defined by hand with JSON serializers (no code generation). Each request says how the
 * server answers it: after `delayMs`, with status `code` (OK when absent), `count` messages on a
 * stream; `hang` never answers.
 */
import {
  type CallOptions,
  type Client,
  credentials,
  type Interceptor,
  Metadata,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerInterceptor,
  type ServerReadableStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type ServiceError,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';

/** The echo's answer: a counter. */
export interface Reply {
  n: number;
}

export interface EchoRequest {
  delayMs?: number;
  code?: number;
  count?: number;
  hang?: boolean;
}

const json = {
  requestSerialize: (value: unknown) => Buffer.from(JSON.stringify(value ?? null)),
  requestDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as EchoRequest,
  responseSerialize: (value: unknown) => Buffer.from(JSON.stringify(value ?? null)),
  responseDeserialize: (bytes: Buffer) => JSON.parse(bytes.toString()) as { n: number },
};

export const echoService = {
  unary: { path: '/test.Echo/Unary', requestStream: false, responseStream: false, ...json },
  serverStream: {
    path: '/test.Echo/ServerStream',
    requestStream: false,
    responseStream: true,
    ...json,
  },
  clientStream: {
    path: '/test.Echo/ClientStream',
    requestStream: true,
    responseStream: false,
    ...json,
  },
  bidi: { path: '/test.Echo/Bidi', requestStream: true, responseStream: true, ...json },
} as unknown as ServiceDefinition;

export type Kind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';
export const KINDS: readonly Kind[] = ['unary', 'serverStream', 'clientStream', 'bidi'];

const EchoClient = makeGenericClientConstructor(echoService, 'Echo');

/** What the server saw: calls whose handler ran, and those still running. */
export interface ServerCounts {
  handled: number;
  running: number;
}

function later(ms: number | undefined, fn: () => void): void {
  if (ms === undefined || ms <= 0) setImmediate(fn);
  else setTimeout(fn, ms);
}

function fail(code: number) {
  return { code, details: `echo: status ${code}`, metadata: new Metadata() };
}

export async function startServer(
  interceptors: ServerInterceptor[] = [],
): Promise<{ port: number; server: Server; counts: ServerCounts; close(): Promise<void> }> {
  const server = new Server({ interceptors });
  const counts: ServerCounts = { handled: 0, running: 0 };
  const begin = () => {
    counts.handled++;
    counts.running++;
    let done = false;
    return () => {
      if (!done) {
        done = true;
        counts.running--;
      }
    };
  };
  server.addService(echoService, {
    unary(call: ServerUnaryCall<EchoRequest, Reply>, callback: sendUnaryData<Reply>) {
      const end = begin();
      call.on('cancelled', end);
      // (A call cancelled before its handler ran: grpc-js emitted `cancelled` already.)
      if (call.cancelled) end();
      const r: EchoRequest = call.request ?? {};
      if (r.hang) return;
      later(r.delayMs, () => {
        end();
        if (r.code) callback(fail(r.code));
        else callback(null, { n: 1 });
      });
    },
    serverStream(call: ServerWritableStream<EchoRequest, Reply>) {
      const end = begin();
      call.on('cancelled', end);
      // (A call cancelled before its handler ran: grpc-js emitted `cancelled` already.)
      if (call.cancelled) end();
      const r: EchoRequest = call.request ?? {};
      if (r.hang) return;
      for (let i = 0; i < (r.count ?? 2); i++) call.write({ n: i });
      later(r.delayMs, () => {
        end();
        if (r.code) call.emit('error', fail(r.code));
        else call.end();
      });
    },
    clientStream(call: ServerReadableStream<EchoRequest, Reply>, callback: sendUnaryData<Reply>) {
      const end = begin();
      call.on('cancelled', end);
      // (A call cancelled before its handler ran: grpc-js emitted `cancelled` already.)
      if (call.cancelled) end();
      let first: EchoRequest | undefined;
      let n = 0;
      call.on('data', (r: EchoRequest) => {
        first ??= r;
        n++;
      });
      call.on('end', () => {
        const r = first ?? {};
        if (r.hang) return;
        later(r.delayMs, () => {
          end();
          if (r.code) callback(fail(r.code));
          else callback(null, { n });
        });
      });
    },
    bidi(call: ServerDuplexStream<EchoRequest, Reply>) {
      const end = begin();
      call.on('cancelled', end);
      // (A call cancelled before its handler ran: grpc-js emitted `cancelled` already.)
      if (call.cancelled) end();
      let first: EchoRequest | undefined;
      let n = 0;
      call.on('data', (r: EchoRequest) => {
        first ??= r;
        call.write({ n: n++ });
      });
      call.on('end', () => {
        const r = first ?? {};
        if (r.hang) return;
        later(r.delayMs, () => {
          end();
          if (r.code) call.emit('error', fail(r.code));
          else call.end();
        });
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  return {
    port,
    server,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: grpc-js types a generic client's methods as untyped functions.
export type EchoClientInstance = Client & Record<Kind, (...args: unknown[]) => any>;

export function connect(port: number, interceptors: Interceptor[] = []): EchoClientInstance {
  return new EchoClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors,
    // Its connection closes with the client (the global pool keeps it for a while).
    'grpc.use_local_subchannel_pool': 1,
  }) as unknown as EchoClientInstance;
}

/** How a call ended, as the client saw it. */
export interface Ended {
  code: number;
  details: string;
  metadata: Metadata;
  messages: number;
}

/** A started call: its handle (to cancel it) and its end. */
export interface Started {
  cancel(): void;
  ended: Promise<Ended>;
}

/**
 * Starts a call of `kind` carrying `request` (sent as the one message, or the first of two on a
 * client stream) and resolves when it ends, whatever its status.
 */
export function call(
  client: EchoClientInstance,
  kind: Kind,
  request: EchoRequest,
  options: CallOptions & { metadata?: Metadata } = {},
): Started {
  const metadata = options.metadata ?? new Metadata();
  const { metadata: _m, ...callOptions } = options;
  let messages = 0;
  let resolve!: (e: Ended) => void;
  const ended = new Promise<Ended>((r) => {
    resolve = r;
  });
  const onStatus = (s: { code: number; details: string; metadata: Metadata }) =>
    resolve({ code: s.code, details: s.details, metadata: s.metadata, messages });
  let handle: { cancel(): void };
  const unaryDone = (error: ServiceError | null) => {
    if (error) onStatus(error);
    else {
      messages++;
      onStatus({ code: status.OK, details: '', metadata: new Metadata() });
    }
  };
  if (kind === 'unary') {
    handle = client.unary(request, metadata, callOptions, unaryDone);
  } else if (kind === 'clientStream') {
    const stream = client.clientStream(metadata, callOptions, unaryDone);
    stream.on('error', () => {});
    stream.write(request);
    stream.write({});
    stream.end();
    handle = stream;
  } else {
    const stream =
      kind === 'serverStream'
        ? client.serverStream(request, metadata, callOptions)
        : client.bidi(metadata, callOptions);
    stream.on('data', () => messages++);
    stream.on('error', () => {});
    stream.on('status', onStatus);
    if (kind === 'bidi') {
      stream.write(request);
      stream.end();
    }
    handle = stream;
  }
  return { cancel: () => handle.cancel(), ended };
}

/** Waits until `check` holds, polling each turn of the event loop (bounded by a count, not time). */
export async function until(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error('condition not reached');
}
