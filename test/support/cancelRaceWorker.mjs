// Worker-thread bootstrap: load TypeScript through tsx, then run one dispatch worker of the cancel race.
import { register } from 'tsx/esm/api';

register();
await import('./cancelRace.ts');
