// S1's downstream as a gRPC service: one unary method, Slow.Call, with JSON messages (no .proto).
const json = {
  requestSerialize: (v) => Buffer.from(JSON.stringify(v)),
  requestDeserialize: (b) => JSON.parse(b.toString()),
  responseSerialize: (v) => Buffer.from(JSON.stringify(v)),
  responseDeserialize: (b) => JSON.parse(b.toString()),
};
export const slowService = {
  call: { path: '/s1.Slow/Call', requestStream: false, responseStream: false, ...json },
};
