// Reading the registration files listed in `app_service_config_files` at start: every file's
// problems and the conflicts between files are collected and thrown together, as for the
// configuration itself.

import { readFileSync } from 'node:fs';
import { type ConfigIssue, ConfigError } from '../config/index.js';
import { type SourcedRegistration, registrationConflicts } from './conflicts.js';
import { AppServices } from './namespaces.js';
import { type AppServiceRegistration, readRegistration } from './registration.js';

/**
 * The registrations in `paths`, in order. Throws ConfigError listing every problem, each as
 * `<file>: <field>: <message>`.
 */
export function loadRegistrations(paths: readonly string[], serverName: string): readonly AppServiceRegistration[] {
  const issues: ConfigIssue[] = [];
  const loaded: SourcedRegistration[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      issues.push({ path, message: `cannot read the file: ${(err as Error).message}` });
      continue;
    }
    const read = readRegistration(text, serverName);
    for (const issue of read.issues) issues.push({ path: `${path}: ${issue.path}`, message: issue.message });
    if (read.registration !== undefined) loaded.push({ source: path, registration: read.registration });
  }
  issues.push(...registrationConflicts(loaded, serverName));
  if (issues.length > 0) throw new ConfigError(issues, 'app_service_config_files');
  return Object.freeze(loaded.map((entry) => entry.registration));
}

/** The services registered by `app_service_config_files`; throws ConfigError as loadRegistrations. */
export function loadAppServices(paths: readonly string[], serverName: string): AppServices {
  return new AppServices(loadRegistrations(paths, serverName), serverName);
}
