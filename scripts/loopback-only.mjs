// Runs one module with its connections limited to this machine: a connection to any other host throws
// before it is made. check-readme-blocks.mjs runs every README block through it, so a block that needs
// the network fails the docs check instead of passing only where the network is up.
//
//   node scripts/loopback-only.mjs <module file>
import net from 'node:net';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Whether `host` names this machine. */
function isLoopback(host) {
  return host === 'localhost' || host === '::1' || /^(::ffff:)?127\./.test(host);
}

const connect = net.Socket.prototype.connect;
// Every TCP or TLS client (node:http, fetch, undici, ioredis, pg) connects through this method.
net.Socket.prototype.connect = function connectToLoopbackOnly(...args) {
  // net.connect() passes its normalized [options, callback]; a direct call passes
  // (options | port[, host] | path[, callback]).
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  let host;
  if (typeof first === 'object' && first !== null) {
    if (first.path === undefined) host = first.host ?? 'localhost';
  } else if (typeof first === 'number' || /^\d+$/.test(String(first))) {
    host = typeof args[1] === 'string' ? args[1] : 'localhost';
  }
  if (host !== undefined && !isLoopback(host)) {
    throw new Error(
      `connection to ${host} refused: this code may only connect to this machine (127.0.0.1, ::1, localhost)`,
    );
  }
  return connect.apply(this, args);
};

await import(pathToFileURL(resolve(process.argv[2])).href);
