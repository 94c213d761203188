// Every URL a route answers: each accepted protocol name and each version alias, derived from one
// definition so that no route is mounted by hand twice.

import type { RouteDef } from './route.js';

/** Path segments accepted inbound: the spec's name first, then the ecosystem's. */
const API_ROOTS = ['_chat', '_matrix'] as const;
const ADMIN_ROOTS = ['_ext', '_synapse'] as const;
const WELL_KNOWN_ROOTS = ['chat', 'matrix'] as const;

/** A version segment; the empty version means none (`/_chat/client/versions`). */
function segment(version: string): string {
  return version === '' ? '' : `/${version}`;
}

export function mountPaths(route: Pick<RouteDef, 'api' | 'versions' | 'path'>): string[] {
  const versions = route.versions ?? [];
  switch (route.api) {
    case 'root':
      return [route.path];
    case 'wellKnown':
      return WELL_KNOWN_ROOTS.map((name) => `/.well-known/${name}${route.path}`);
    case 'admin':
      return ADMIN_ROOTS.flatMap((root) => versions.map((v) => `/${root}/admin${segment(v)}${route.path}`));
    default:
      return API_ROOTS.flatMap((root) =>
        versions.map((v) => `/${root}/${route.api}${segment(v)}${route.path}`),
      );
  }
}
