/** Who a request acts for, once its credentials are verified. */
export interface Identity {
  readonly subject: string;
  readonly method: 'basic' | 'bearer';
  /** The public key id, for Basic; never the secret. */
  readonly key?: string | undefined;
}
