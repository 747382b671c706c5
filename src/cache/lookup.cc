#include "cache/lookup.h"

#include <chrono>
#include <utility>

namespace frugal::cache {
namespace {

using SteadyClock = std::chrono::steady_clock;

double MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

}  // namespace

StatusOr<LookupResult> LookupPipeline::Lookup(const std::string& scope, std::string_view ns,
                                              std::string_view query) {
  LookupResult r;
  cm_.lookups->Add(1);
  cm_.lookups_seen.fetch_add(1);
  // Entries met on the way that must not answer: one of another scope or namespace, a malformed
  // one. Each counted once per lookup, whatever the outcome.
  bool foreign = false, bad = false;
  auto counted = [&](const LookupResult& res) {
    if (foreign) cm_.scope_mismatches->Add(1);
    if (bad) cm_.bad_entries->Add(1);
    cm_.Counted(res);
  };
  if (query.size() > opt_.max_semantic_bytes) {
    // Longer than the verifier reads: never embedded, never cached (Insert skips it), so not
    // even the exact text is asked for (hashing a megabyte under a lock would stall others).
    r.too_long = true;
    counted(r);
    return r;
  }
  if (opt_.exact_match) {
    // The very same text in the same scope needs neither embedding nor search (and cannot be
    // missed by an approximate index); the guard has nothing to compare.
    auto same = store_.GetExact(scope, query);
    if (!same.ok()) {
      counted(r);  // the store failed: a miss, never a failed request
      return r;
    }
    if (const std::optional<StoredEntry>& e = *same) {
      // The store's key joins (or hashes) scope and query: the entry must be this very scope's,
      // namespace's and query's to answer; otherwise the vectors are asked.
      if (e->malformed) {
        bad = true;
      } else if (e->scope != scope || e->ns != ns || e->query != query) {
        foreign = true;
      } else {
        r.hit = r.exact = true;
        r.similarity = 1.0f;
        r.cached_query = e->query;
        r.response = e->response;
        store_.Touch(*e);
        counted(r);
        return r;
      }
    }
  }
  const std::unique_ptr<ModelLease> model = store_.Lease(/*for_insert=*/false);
  auto t0 = SteadyClock::now();
  auto embedded = model->embedder->Embed(query);
  if (!embedded.ok()) {
    counted(r);
    return embedded.status();
  }
  r.embed_ms = MsSince(t0);
  cm_.embed_s->Observe(r.embed_ms / 1e3);
  r.embedding = std::move(embedded).value();
  r.embedded_by = model->embedder;
  const float threshold = ThresholdFor(opt_, ns, *model->embedder);
  t0 = SteadyClock::now();
  auto found = store_.Search(*model, scope, r.embedding, opt_.candidates, threshold);
  r.search_ms = MsSince(t0);
  cm_.search_s->Observe(r.search_ms / 1e3);
  if (!found.ok()) {
    counted(r);  // the store failed: a miss, never a failed request
    return r;
  }
  std::vector<const StoredEntry*> kept;
  std::vector<HitCandidate> cands;
  for (const StoredEntry& e : *found) {
    if (e.similarity && *e.similarity < threshold) break;  // nearest first: the rest are farther
    if (e.gone) continue;
    if (e.malformed || !e.similarity) {
      bad = true;
      continue;
    }
    // A store searches the scope's entries only (a partition, a TAG of its hash); checked
    // again before an entry answers.
    if (e.scope != scope || e.ns != ns) {
      foreign = true;
      continue;
    }
    kept.push_back(&e);
    cands.push_back({*e.similarity, e.query, e.response, e.vector});
  }
  const bool opaque =
      opt_.guard && !cands.empty() && model->embedder->UnknownShare(query) > opt_.max_unknown_share;
  const int hit = PickHit(cands, opt_.guard ? model->verifier.get() : nullptr, *model->embedder,
                          opaque, query, &r, r.embedding);
  if (hit >= 0) store_.Touch(*kept[static_cast<size_t>(hit)]);
  if (r.cached_query.empty()) {
    // No candidate: the similarity of the nearest entry the store found, for the record.
    for (const StoredEntry& e : *found) {
      if (e.similarity) {
        r.similarity = *e.similarity;
        break;
      }
    }
  }
  counted(r);
  return r;
}

Status LookupPipeline::Insert(const std::string& scope, std::string_view ns, std::string_view query,
                              std::string_view response, const LookupResult* looked_up) {
  if (query.size() > opt_.max_semantic_bytes)
    return Status::Ok();  // not cached (Lookup never embeds it either)
  const std::unique_ptr<ModelLease> model = store_.Lease(/*for_insert=*/true);
  std::vector<float> v;
  if (looked_up && looked_up->embedded_by == model->embedder && !looked_up->embedding.empty()) {
    v = looked_up->embedding;
  } else {
    FRUGAL_ASSIGN_OR_RETURN(v, model->embedder->Embed(query));
  }
  // During a rotation to a new model the entry needs that model's vector too.
  std::optional<std::vector<float>> nv;
  if (model->next_embedder) {
    FRUGAL_ASSIGN_OR_RETURN(nv, model->next_embedder->Embed(query));
  }
  FRUGAL_RETURN_IF_ERROR(
      store_.Put(*model, scope, ns, query, response, std::move(v), nv ? &*nv : nullptr));
  cm_.insertions->Add(1);
  return Status::Ok();
}

Verdict VerifyHit(const HitVerifier& verifier, bool opaque, std::string_view query,
                  std::string_view cached_query, float cosine, Embedder& embedder,
                  const PairVectors& vectors) {
  if (opaque) {
    Verdict v;
    v.accept = CanonicalText(query) == CanonicalText(cached_query);
    v.p_same = v.accept ? 1 : 0;
    v.reason = v.accept ? "" : "opaque";
    return v;
  }
  return verifier.VerifyWithVectors(query, cached_query, cosine, embedder, vectors);
}

int PickHit(std::span<const HitCandidate> candidates, const HitVerifier* guard, Embedder& embedder,
            bool opaque, std::string_view query, LookupResult* r,
            std::span<const float> query_vector) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    const HitCandidate& c = candidates[i];
    if (r->cached_query.empty()) {
      r->similarity = c.similarity;
      r->cached_query = std::string(c.query);
    }
    if (guard != nullptr) {
      const Verdict v = VerifyHit(*guard, opaque, query, c.query, c.similarity, embedder,
                                  PairVectors{query_vector, c.vector});
      if (!v.accept) {
        r->rejected_by_guard = true;
        if (*r->refusal == '\0') r->refusal = v.reason;
        continue;
      }
    }
    r->hit = true;
    r->rejected_by_guard = false;
    r->refusal = "";
    r->similarity = c.similarity;
    r->cached_query = std::string(c.query);
    r->response = std::string(c.response);
    return static_cast<int>(i);
  }
  return -1;
}

}  // namespace frugal::cache
