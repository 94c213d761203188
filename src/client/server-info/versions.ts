// GET /_chat/client/versions: the client-API specification versions this server speaks, and the
// unstable features it offers. Asked before login, so it needs no token.

import type { RouteDef } from '../../http/route.js';

/** Every released version whose endpoints this server answers, oldest first (as Synapse lists them). */
export const SUPPORTED_SPEC_VERSIONS: readonly string[] = [
  'r0.0.1',
  'r0.1.0',
  'r0.2.0',
  'r0.3.0',
  'r0.4.0',
  'r0.5.0',
  'r0.6.0',
  'r0.6.1',
  'v1.1',
  'v1.2',
  'v1.3',
  'v1.4',
  'v1.5',
  'v1.6',
  'v1.7',
  'v1.8',
  'v1.9',
  'v1.10',
  'v1.11',
];

/**
 * Feature flags from before their specification versions: clients of r0 ask for them by name.
 * Only what this server really does is listed; anything absent reads as false.
 */
export const UNSTABLE_FEATURES: Readonly<Record<string, boolean>> = {
  // Lazy-loading of members in /sync and /messages filters (spec since r0.5.0).
  'm.lazy_load_members': true,
  // Registration and 3PID binding never need an identity server here.
  'm.require_identity_server': false,
  // Room summaries (MSC3266), also under their unstable paths.
  'im.nheko.summary': true,
  // Threads (MSC3440, in the spec since 1.4) and relations with recursion (MSC3981).
  'org.matrix.msc3440.stable': true,
  'org.matrix.msc3981': true,
};

export function versionsRoutes(): RouteDef[] {
  return [
    {
      method: 'GET',
      api: 'client',
      versions: [''],
      path: '/versions',
      auth: 'none',
      handler: () => ({
        body: { versions: [...SUPPORTED_SPEC_VERSIONS], unstable_features: { ...UNSTABLE_FEATURES } },
      }),
    },
  ];
}
