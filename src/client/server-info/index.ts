// Server-level client endpoints: versions, capabilities and the discovery documents.

import type { RouteDef } from '../../http/route.js';
import { capabilitiesRoutes } from './capabilities.js';
import { versionsRoutes } from './versions.js';
import { type WellKnownSettings, wellKnownRoutes } from './well-known.js';

export { capabilities } from './capabilities.js';
export { SUPPORTED_SPEC_VERSIONS, UNSTABLE_FEATURES } from './versions.js';
export type { WellKnownSettings } from './well-known.js';

/** `defaultRoomVersion`: the version /capabilities names as the default for new rooms. */
export function serverInfoRoutes(wellKnown: WellKnownSettings, defaultRoomVersion?: string): RouteDef[] {
  return [...versionsRoutes(), ...capabilitiesRoutes(defaultRoomVersion), ...wellKnownRoutes(wellKnown)];
}
