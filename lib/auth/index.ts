export * from './sas.js';
export * from './grants.js';
export * from './connection-string.js';
