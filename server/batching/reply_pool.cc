#include "server/batching/reply_pool.h"

#include <utility>

#include "base/thread_name.h"

namespace normd {
namespace {

struct HelperWake {
  const std::deque<PendingAnswer>* queue;
  const bool* stopping;
};

bool HelperShouldWake(HelperWake* wake) { return *wake->stopping || !wake->queue->empty(); }

struct AllSent {
  const std::deque<PendingAnswer>* queue;
  const int* answering;
};

bool IsAllSent(AllSent* sent) { return sent->queue->empty() && *sent->answering == 0; }

}  // namespace

void SendAnswer(PendingAnswer& answer) {
  answer.item->Complete(answer.status, answer.report);
  answer.item.reset();  // the call state it pointed into may go once it is answered
}

ReplyPool::ReplyPool(int threads) {
  for (int i = 1; i < threads; ++i) helpers_.emplace_back([this] { HelperLoop(); });
}

ReplyPool::~ReplyPool() {
  Drain();
  {
    normd::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& helper : helpers_) helper.join();
}

void ReplyPool::Post(std::vector<PendingAnswer>& answers) {
  if (helpers_.empty()) {
    for (PendingAnswer& answer : answers) SendAnswer(answer);
  } else {
    // Unlocking with answers queued wakes a sleeping helper, which wakes the next as it takes one
    // and leaves more behind.
    normd::MutexLock lock(&mu_);
    for (PendingAnswer& answer : answers) queue_.push_back(std::move(answer));
    posted_.store(queue_.size(), std::memory_order_relaxed);
  }
  answers.clear();
}

bool ReplyPool::Take(PendingAnswer& answer) {
  if (queue_.empty()) return false;
  answer = std::move(queue_.front());
  queue_.pop_front();
  posted_.store(queue_.size(), std::memory_order_relaxed);
  ++answering_;
  return true;
}

void ReplyPool::Finished() {
  normd::MutexLock lock(&mu_);
  --answering_;
}

bool ReplyPool::AnswerOne() {
  if (!has_posted()) return false;
  PendingAnswer answer;
  {
    normd::MutexLock lock(&mu_);
    if (!Take(answer)) return false;
  }
  SendAnswer(answer);
  Finished();
  return true;
}

void ReplyPool::Drain() {
  while (AnswerOne()) {
  }
  AllSent sent{&queue_, &answering_};
  normd::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&IsAllSent, &sent));
}

void ReplyPool::HelperLoop() {
  NameThisThread("normd-reply");
  HelperWake wake{&queue_, &stopping_};
  while (true) {
    PendingAnswer answer;
    {
      normd::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&HelperShouldWake, &wake));
      // Stopping comes after Drain: nothing is left to answer then.
      if (!Take(answer)) return;
    }
    SendAnswer(answer);
    Finished();
  }
}

}  // namespace normd
