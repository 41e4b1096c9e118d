/**
 * The file formats and text encodings rows are exported in and imported from (the seed spec's
 * "Export rows", CONTRACT §7): the same for both ways, so a file rows-export writes can be
 * imported again. What each means is export/ and import/'s; the names are what requests parse.
 */

export const FILE_FORMATS = ['csv', 'tsv', 'jsonl'] as const;
export type FileFormat = (typeof FILE_FORMATS)[number];

/** UTF-8, UTF-8 with a BOM for spreadsheet software, and Shift_JIS as Windows-31J (CP932). */
export const TEXT_ENCODINGS = ['utf8', 'utf8Bom', 'shiftJis'] as const;
export type TextEncoding = (typeof TEXT_ENCODINGS)[number];
