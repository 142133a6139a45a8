import { test } from "node:test";
import assert from "node:assert/strict";
import { pythonCompactJson, storageKey, STORAGE_KEY_PATTERN } from "../../src/auth/storage-key.ts";

// Expected values computed with:
//   python3 -c 'import json,hashlib; s=json.dumps([u,a,t],separators=(",",":")); print("lat:v1:"+hashlib.sha256(s.encode()).hexdigest())'
const cases: Array<[[string, string, string], string, string]> = [
  [["service", "chatbot-agent", "t1"], '["service","chatbot-agent","t1"]',
    "lat:v1:08053098504c64cf13e1626647641099200861cbc7ca262bec5f04f7e3410137"],
  [["Zoë", "agent-ä", "スレッド 1"], '["Zo\\u00eb","agent-\\u00e4","\\u30b9\\u30ec\\u30c3\\u30c9 1"]',
    "lat:v1:f0abe278cefdb54079ccb6a8a85c9b996c18ad66d0bdd7665cd72cd95bf9e667"],
  [['quote"user', "back\\slash", "tab\there\nnl"], '["quote\\"user","back\\\\slash","tab\\there\\nnl"]',
    "lat:v1:0fd64055702fe90754fb5c8fb61e818b46d74360d86daa0d971b9ae9a76b1c34"],
  [["emoji 😀", "a\u007fb", "\u0001ctl"], '["emoji \\ud83d\\ude00","a\\u007fb","\\u0001ctl"]',
    "lat:v1:dafefb77d475fed98a5e5b8d3aac41bd95c2813f804f16f2eac32162a9655066"],
];

test("compact JSON matches Python's json.dumps byte for byte", () => {
  for (const [parts, json] of cases) assert.equal(pythonCompactJson(parts), json);
});

test("storage keys match the earlier implementation", () => {
  for (const [[user, agent, thread], , key] of cases) {
    assert.equal(storageKey(user, agent, thread), key);
    assert.match(key, STORAGE_KEY_PATTERN);
  }
});

test("each part of the triple changes the key", () => {
  const base = storageKey("u", "a", "t");
  assert.notEqual(storageKey("u2", "a", "t"), base);
  assert.notEqual(storageKey("u", "a2", "t"), base);
  assert.notEqual(storageKey("u", "a", "t2"), base);
  // No ambiguity from concatenation: the parts are JSON-array delimited.
  assert.notEqual(storageKey("ab", "c", "t"), storageKey("a", "bc", "t"));
});
