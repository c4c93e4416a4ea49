//! Containment cycles among ctxs: found by one pass over the strongly connected components of
//! the ctx graph, then, only in a component that holds one, the edge that closes it.

use std::collections::{HashMap, HashSet};

use crate::diag::Diagnostic;

use super::{Checker, Edge};

impl Checker {
    /// Reports every ctx that contains itself. Edges are added in source order; an edge that
    /// closes a cycle is reported where it is written, and left out so a cycle is reported once.
    ///
    /// An edge can close a cycle only inside a strongly connected component of the whole
    /// graph, and a path between two nodes of a component never leaves it. So the components
    /// are found first, in linear time; edges between components are never searched, and a
    /// plan without a cycle (every component a single ctx that does not contain itself) is
    /// done there.
    pub(super) fn cycles(&mut self) {
        let edges = std::mem::take(&mut self.edges);
        let mut ids: HashMap<&str, usize> = HashMap::new();
        for edge in &edges {
            for name in [edge.from.as_str(), edge.to.as_str()] {
                let next = ids.len();
                ids.entry(name).or_insert(next);
            }
        }
        let mut successors = vec![Vec::new(); ids.len()];
        for edge in &edges {
            successors[ids[edge.from.as_str()]].push(ids[edge.to.as_str()]);
        }
        self.work += (ids.len() + edges.len()) as u64;
        let (component, work) = components(&successors);
        self.work += work;
        let cyclic =
            |edge: &Edge| component[ids[edge.from.as_str()]] == component[ids[edge.to.as_str()]];
        if !edges.iter().any(cyclic) {
            return;
        }
        let mut graph: HashMap<String, Vec<String>> = HashMap::new();
        for edge in edges.iter().filter(|e| cyclic(e)) {
            if let Some(path) = find_path(&graph, &edge.to, &edge.from, &mut self.work) {
                let message = if edge.from == edge.to {
                    format!("`{}` contains itself", edge.from)
                } else {
                    let mut chain = vec![edge.from.clone()];
                    chain.extend(path);
                    format!("`{}` contains itself: {}", edge.from, chain.join(" -> "))
                };
                self.error(
                    Diagnostic::error(message, edge.span)
                        .with_label("this makes a cycle")
                        .with_help("a ctx can include another ctx, but never itself, directly or through `+=`"),
                );
                continue;
            }
            graph
                .entry(edge.from.clone())
                .or_default()
                .push(edge.to.clone());
        }
    }
}

/// A path from `from` to `to` in `graph` (both ends included), if there is one: depth first,
/// the last successor first. Each step remembers the step it came from instead of copying its
/// path, so a search costs the nodes and edges it visits (counted in `work`).
fn find_path(
    graph: &HashMap<String, Vec<String>>,
    from: &str,
    to: &str,
    work: &mut u64,
) -> Option<Vec<String>> {
    // Every step pushed: its node and the step it was pushed from.
    let mut steps: Vec<(&str, Option<usize>)> = vec![(from, None)];
    let mut stack = vec![0];
    let mut seen = HashSet::new();
    while let Some(at) = stack.pop() {
        *work += 1;
        let node = steps[at].0;
        if node == to {
            let mut path = Vec::new();
            let mut step = Some(at);
            while let Some(i) = step {
                path.push(steps[i].0.to_owned());
                step = steps[i].1;
            }
            path.reverse();
            return Some(path);
        }
        if !seen.insert(node) {
            continue;
        }
        for next in graph.get(node).into_iter().flatten() {
            *work += 1;
            stack.push(steps.len());
            steps.push((next, Some(at)));
        }
    }
    None
}

/// The strongly connected component of every node of a graph given as successor lists
/// (Tarjan's algorithm, without recursion so a deep chain cannot overflow the stack), and
/// the steps it took: linear in nodes and edges.
fn components(successors: &[Vec<usize>]) -> (Vec<usize>, u64) {
    const UNSEEN: usize = usize::MAX;
    let n = successors.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSEEN; n];
    let mut stack = Vec::new();
    let mut next_index = 0;
    let mut next_component = 0;
    let mut work = 0u64;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // Each frame: a node and how many of its successors have been looked at.
        let mut frames = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut done)) = frames.last_mut() {
            work += 1;
            if let Some(&next) = successors[node].get(*done) {
                *done += 1;
                if index[next] == UNSEEN {
                    index[next] = next_index;
                    low[next] = next_index;
                    next_index += 1;
                    stack.push(next);
                    on_stack[next] = true;
                    frames.push((next, 0));
                } else if on_stack[next] {
                    low[node] = low[node].min(index[next]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == node {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    (component, work)
}
