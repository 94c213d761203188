// Storage for accounts: users, devices, access tokens, registration tokens, UIA sessions.

export * from './users.js';
export * from './devices.js';
export * from './access-tokens.js';
export * from './registration-tokens.js';
export * from './uia-sessions.js';
export * from './erased-users.js';
