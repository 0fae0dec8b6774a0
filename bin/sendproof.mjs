#!/usr/bin/env node
// Runs the TypeScript CLI without a build step (tsx's ESM loader), so a fresh clone works after `npm ci`.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
