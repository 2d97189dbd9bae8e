/** Who a request acts for, once its credentials are verified. */
export interface Identity {
  readonly subject: string;
  readonly method: 'basic' | 'bearer';
  /** The public key id, for Basic; never the secret. */
  readonly key?: string | undefined;
  /** Bearer: the name of the key source that verified the token. */
  readonly source?: string | undefined;
  /** Bearer, tokens the gateway issued: the web-app user the token was exchanged for. */
  readonly username?: string | undefined;
  /**
   * What the credential may do: a pair's or user's scopes (Basic; tokens the gateway issues
   * carry the user's), or a token's `scope`/`scp` claim. Empty when it carries none.
   */
  readonly scopes: readonly string[];
}
