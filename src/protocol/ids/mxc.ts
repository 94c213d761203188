// Content URIs `mxc://<server-name>/<media-id>` (client-server API, "Matrix Content URIs").
// The media ID is limited to `[A-Za-z0-9_-]` so it can never walk a path on disk or in a URL.

import { type Branded, type ParseOptions, checked } from './common.js';
import { type ServerName, serverNameProblem } from './server-name.js';

export type MxcUri = Branded<'MxcUri'>;

export interface MxcParts {
  readonly serverName: ServerName;
  readonly mediaId: string;
}

const SCHEME = 'mxc://';
const MEDIA_ID = /^[A-Za-z0-9_-]+$/;

function split(s: string): MxcParts | string {
  if (!s.startsWith(SCHEME)) return "must start with 'mxc://'";
  const rest = s.slice(SCHEME.length);
  // Server names hold no '/', so the first one ends it.
  const slash = rest.indexOf('/');
  if (slash === -1) return "has no '/' between the server name and the media ID";
  const serverName = rest.slice(0, slash);
  const serverProblem = serverNameProblem(serverName);
  if (serverProblem !== undefined) return `server name ${serverProblem}`;
  const mediaId = rest.slice(slash + 1);
  if (mediaId.length === 0) return 'media ID is empty';
  if (!MEDIA_ID.test(mediaId)) return 'media ID may hold only A-Z, a-z, 0-9, "_" and "-"';
  return { serverName: serverName as ServerName, mediaId };
}

function mxcProblem(s: string): string | undefined {
  const r = split(s);
  return typeof r === 'string' ? r : undefined;
}

export function parseMxcUri(input: unknown, opts?: ParseOptions): MxcUri {
  return checked('mxc URI', input, mxcProblem, opts) as MxcUri;
}

export function isMxcUri(input: unknown): input is MxcUri {
  return typeof input === 'string' && mxcProblem(input) === undefined;
}

export function tryParseMxcUri(input: unknown): MxcUri | undefined {
  return isMxcUri(input) ? input : undefined;
}

/** The server name and media ID of a parsed mxc URI. */
export function mxcPartsOf(uri: MxcUri): MxcParts {
  return split(uri) as MxcParts;
}

/** The URI `mxc://serverName/mediaId`, checked. */
export function mxcUriFrom(serverName: ServerName, mediaId: string, opts?: ParseOptions): MxcUri {
  return parseMxcUri(`${SCHEME}${serverName}/${mediaId}`, opts);
}
