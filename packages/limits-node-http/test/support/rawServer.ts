import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';

/**
 * A server on 127.0.0.1:0 that speaks HTTP/1.1 by hand, for the answers a `node:http` server never
 * sends: a status outside 200–599, a reason phrase of any bytes (Latin-1, UTF-8, control
 * characters). Request `n` (from 1) is answered with `statusLines[n - 1]` (the last one once they
 * run out), then `content-length`, `connection: close` and the body `ok`, and its connection closed.
 */
export interface RawServer {
  readonly url: string;
  /** Requests answered so far. */
  readonly requests: number;
  close(): Promise<void>;
}

/** A status line as the bytes sent: `text` in Latin-1 (one byte per character below 256). */
export function latin1(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

/** A status line as the bytes sent: `text` in UTF-8. */
export function utf8(text: string): Buffer {
  return Buffer.from(text, 'utf8');
}

export async function startRawServer(...statusLines: Buffer[]): Promise<RawServer> {
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let head = '';
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      // The requests the tests send have no body: the header block ends the request.
      if (answered || !head.includes('\r\n\r\n')) return;
      answered = true;
      const line = statusLines[Math.min(requests, statusLines.length - 1)] as Buffer;
      requests++;
      socket.end(
        Buffer.concat([line, latin1('\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok')]),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get requests() {
      return requests;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
