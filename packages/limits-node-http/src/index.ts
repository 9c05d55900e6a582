// limits-node-http: HTTP integrations for limits-core (see README.md).
export { type LoadShed, loadShed } from './loadShed.js';
export type {
  FastifyInstanceLike,
  FastifyReplyLike,
  FastifyRequestLike,
  LoadShedPlugin,
} from './loadShedFastify.js';
export type { LoadShedOptions } from './loadShedOptions.js';
export { type ShedResponse, shedResponse } from './loadShedResponse.js';
