/** A file value as a row stores it: the reference written, completed on attach with the file's type and size. */
export interface StoredFile {
  id: string;
  name: string;
  mimeType?: string;
  size?: number;
}

/** A signed download URL of a file, and when it stops working. */
export interface FileLink {
  url: string;
  expiresAt: string;
}

/** Signs a file value's download URL while a row is rendered (files/files.ts makes these). */
export type FileLinks = (file: StoredFile, tableId: string, rowId: string) => FileLink;
