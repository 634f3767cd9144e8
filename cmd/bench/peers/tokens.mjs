// tokens.mjs reads a JSON array of texts on stdin and prints, as JSON, the
// o200k_base and cl100k_base token counts of each (js-tiktoken; the ranks
// ship in the package, nothing is downloaded).
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import cl100k from "js-tiktoken/ranks/cl100k_base";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const o = new Tiktoken(o200k), c = new Tiktoken(cl100k);
const texts = JSON.parse(input);
process.stdout.write(JSON.stringify(texts.map((t) => ({ o200k: o.encode(t).length, cl100k: c.encode(t).length }))));
