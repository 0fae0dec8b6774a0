import { SendproofError } from '../domain/errors.js';

/**
 * A ledger row image the archiver cannot turn into transitions (history and version disagree). It is
 * thrown, not skipped: the record is retried and then lands in the on-failure destination, where a
 * human sees it. Silently dropping a transition would leave a hole in the audit trail.
 */
export class ArchiveRecordError extends SendproofError {
  constructor(message: string) {
    super('permanent', 'archive_record', message);
  }
}
