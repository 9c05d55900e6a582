import type { FieldNames, RawFields } from './recordFields.js';

/** One record as an input format read it, before its fields are checked. */
export interface RawEntry {
  /** Its fields, keys in lower case. */
  fields: RawFields;
  /** Where it is, for error messages: `file:line`, or a HAR entry's path. */
  where: string;
  /** The names the format gives the fields, when not the plain ones. */
  names?: FieldNames;
}
