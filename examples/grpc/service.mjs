// The example's gRPC service, defined by hand with JSON messages (no .proto, no code generation):
// one unary method, Slow.Work, whose handler takes `ms` milliseconds.
export const slowService = {
  work: {
    path: '/example.Slow/Work',
    requestStream: false,
    responseStream: false,
    requestSerialize: (value) => Buffer.from(JSON.stringify(value)),
    requestDeserialize: (bytes) => JSON.parse(bytes.toString()),
    responseSerialize: (value) => Buffer.from(JSON.stringify(value)),
    responseDeserialize: (bytes) => JSON.parse(bytes.toString()),
  },
};
