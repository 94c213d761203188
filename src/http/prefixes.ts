// Every URL a route answers: each accepted protocol name and each version alias, derived from one
// definition so that no route is mounted by hand twice. The router holds each route under the
// spec's names only; a request under another name is rewritten to the spec's before routing
// (`canonicalUrl`), which halves the router and the handlers it keeps (about 12 MB of the idle
// server's memory). Likewise the client API's `r0` is routed as `v3`, which the spec made of it:
// a route listing both is held once, and one listing `v3` alone refuses requests made under `r0`
// as the router would have (see http/app.ts).

import type { RouteDef } from './route.js';

/** Path segments accepted inbound: the spec's name first, then the ecosystem's. */
const API_ROOTS = ['_chat', '_matrix'] as const;
const ADMIN_ROOTS = ['_ext', '_synapse'] as const;
const WELL_KNOWN_ROOTS = ['chat', 'matrix'] as const;

/** A version segment; the empty version means none (`/_chat/client/versions`). */
function segment(version: string): string {
  return version === '' ? '' : `/${version}`;
}

function pathsUnder(route: Pick<RouteDef, 'api' | 'versions' | 'path'>, roots: number): string[] {
  const versions = route.versions ?? [];
  switch (route.api) {
    case 'root':
      return [route.path];
    case 'wellKnown':
      return WELL_KNOWN_ROOTS.slice(0, roots).map((name) => `/.well-known/${name}${route.path}`);
    case 'admin':
      return ADMIN_ROOTS.slice(0, roots).flatMap((root) => versions.map((v) => `/${root}/admin${segment(v)}${route.path}`));
    default:
      return API_ROOTS.slice(0, roots).flatMap((root) =>
        versions.map((v) => `/${root}/${route.api}${segment(v)}${route.path}`),
      );
  }
}

/** Every URL the route answers. */
export function mountPaths(route: Pick<RouteDef, 'api' | 'versions' | 'path'>): string[] {
  return pathsUnder(route, API_ROOTS.length);
}

/** Whether the route is held under `v3` for `r0` requests too. */
function r0AsV3(route: Pick<RouteDef, 'api' | 'versions'>): boolean {
  return route.api === 'client' && route.versions?.includes('v3') === true;
}

/** The URLs the router holds for the route: those under the spec's names, `r0` as `v3`. */
export function routerPaths(route: Pick<RouteDef, 'api' | 'versions' | 'path'>): string[] {
  if (route.api === 'client' && route.versions?.includes('r0') === true && !r0AsV3(route)) {
    // Its r0 requests would be routed as v3 and never reach it.
    throw new Error(`client route ${route.path} lists r0 without v3`);
  }
  return pathsUnder(r0AsV3(route) ? { ...route, versions: route.versions!.filter((v) => v !== 'r0') } : route, 1);
}

/** Where the router holds the client API's `v3` routes, which answer `r0` requests too. */
export const CLIENT_V3_ROOT = '/_chat/client/v3/';

/** Whether a request URL, as sent, is under the client API's `r0`. */
export function askedUnderR0(originalUrl: string): boolean {
  return originalUrl.startsWith('/_chat/client/r0/') || originalUrl.startsWith('/_matrix/client/r0/');
}

/** A request URL (path and query) with the ecosystem's names replaced by the spec's, and `r0` by `v3`. */
export function canonicalUrl(url: string): string {
  if (askedUnderR0(url)) return CLIENT_V3_ROOT + url.slice(url.indexOf('/r0/') + 4);
  if (url.startsWith('/_matrix/')) return '/_chat/' + url.slice(9);
  if (url.startsWith('/_synapse/admin/') || url.startsWith('/_synapse/admin?') || url === '/_synapse/admin') return '/_ext' + url.slice(9);
  if (url.startsWith('/.well-known/matrix/')) return '/.well-known/chat/' + url.slice(20);
  return url;
}
