// limits-redis: fleet-wide limits on Redis (see README.md).
export {};
