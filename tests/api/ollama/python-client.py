"""The official Python `ollama` client against a running qm (demo upstream models).

Usage: python3 tests/api/ollama/python-client.py URL CHAT_MODEL EMBED_MODEL
Exits 0 and prints "ok" when every call answered as Ollama would; run by
tests/api/ollama/python.test.ts when the interpreter has the `ollama` package.
"""

import sys

import ollama

url, chat_model, embed_model = sys.argv[1:4]
client = ollama.Client(host=url)

res = client.chat(model=chat_model, messages=[{"role": "user", "content": "hi"}])
assert res.done and res.done_reason == "stop", res
assert res.message.role == "assistant" and res.message.content, res

parts = list(
    client.chat(model=chat_model, messages=[{"role": "user", "content": "hi"}], stream=True)
)
assert parts[-1].done and all(not p.done for p in parts[:-1]), parts
assert "".join(p.message.content for p in parts) != ""

gen = client.generate(model=chat_model, prompt="say something")
assert gen.done and gen.response, gen

emb = client.embed(model=embed_model, input=["a", "b"])
assert len(emb.embeddings) == 2 and len(emb.embeddings[0]) > 0, emb

names = [m.model for m in client.list().models]
assert chat_model in names and embed_model in names, names
# The embed model was the last one used: it is resident (the demo models swap).
resident = [m.model for m in client.ps().models]
assert embed_model in resident, resident

# What the client is told of each model: an embedding model does not chat.
assert client.show(embed_model).capabilities == ["embedding"], client.show(embed_model)
assert "completion" in client.show(chat_model).capabilities, client.show(chat_model)
assert "cmd" not in (client.show(chat_model).modelfile or ""), client.show(chat_model)

try:
    client.chat(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    raise AssertionError("an unknown model must fail")
except ollama.ResponseError as e:
    assert e.status_code == 404, e

print("ok")
