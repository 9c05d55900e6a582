// limits-node-http: HTTP integrations for limits-core (see README.md).
export {};
