// The CORS headers every reply carries, errors included, so browser clients can read them.

export const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'X-Requested-With, Content-Type, Authorization, Date',
} as const;
