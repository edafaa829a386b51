export * from './sas.js';
export * from './grants.js';
export * from './authorize.js';
export * from './connection-string.js';
