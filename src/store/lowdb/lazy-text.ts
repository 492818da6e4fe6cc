/** Text made when first needed, kept as one flat string. */

/**
 * `text` as one flat string. A string built by concatenation is a tree of its pieces (V8 cons
 * strings), which keeps every piece and a node per join alive: a document's JSON assembled from
 * cached parts held twice the memory of its text. Converting it to a number flattens it in place.
 */
function flat(text: string): string {
  void Number(text);
  return text;
}

/** `make()`, called at most once; `make` (and what it holds) is let go afterwards. */
export function once(make: () => string): () => string {
  let text: string | undefined;
  let maker: (() => string) | undefined = make;
  return () => {
    if (text === undefined && maker !== undefined) {
      text = flat(maker());
      maker = undefined;
    }
    return text as string;
  };
}
