/**
 * Runs before each test file (vitest's setupFiles): before the file's own modules load, so a
 * client a file makes at import time already points at the emulator it will use.
 */
import { freshEmulatorIfWorn } from './emulator.js';

await freshEmulatorIfWorn();
