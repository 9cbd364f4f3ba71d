"""Questions for tool selection that no part of the agent was tuned on: what the first model call binds.

The agents suite's questions were in view while the lexical selection (`agents.selection`) was tuned, so its
first-pick counts flatter the selection. These questions were written apart from it, phrased as users ask,
over tools the suite does not use as well, each with the tool a run must call first and the others its chain
needs. `python -m evals.agents --selection --heldout` counts them as `--selection` counts the suite's.
"""

from __future__ import annotations

from dataclasses import dataclass

L8 = "sample://eo/landsat8_c1_l1t"
S2 = "sample://eo/sentinel2_l1c"


@dataclass(frozen=True)
class Probe:
    """A question, the tool that must come first, and the rest of its chain."""

    question: str
    first: str
    then: tuple[str, ...] = ()

    @property
    def chain(self) -> list[str]:
        return [self.first, *self.then]


PROBES = [
    Probe(f"Which bands does the scene at {L8} have, and which indices can it give?", "eo_describe_scene"),
    Probe(f"Make a cloud mask for {L8} from its QA band.", "eo_cloud_mask"),
    Probe(f"How hot is the ground in {L8}? Give the average land surface temperature in kelvin.",
          "eo_land_surface_temperature"),
    Probe(f"Estimate the leaf area index of {S2}.", "eo_vegetation_parameters"),
    Probe(f"What fraction of {S2} is covered by vegetation (fractional vegetation cover)?",
          "eo_vegetation_parameters"),
    Probe(f"Convert the digital numbers of {L8} to top-of-atmosphere reflectance.", "eo_radiometric_correction"),
    Probe("Which spectral indices use the red-edge bands?", "eo_list_indices"),
    Probe(f"How many square kilometres of {L8} have an NDWI above zero?", "eo_spectral_index", ("eo_area",)),
    Probe(f"Give the minimum and maximum NDVI of {S2}.", "eo_spectral_index", ("eo_statistics",)),
    Probe(f"Draw a picture of the NDVI of {L8}.", "eo_spectral_index", ("eo_quicklook",)),
    Probe("What scenes are bundled with the server?", "eo_list_scenes"),
    Probe("Generate an Erdos-Renyi graph with 12 nodes and edge probability 0.3.", "graph_generate"),
    Probe("Write the graph with edges [[0, 1], [1, 2], [2, 0]] as an adjacency list.", "graph_serialize"),
    Probe("Does the undirected graph with edges [[0, 1], [1, 2], [2, 3], [3, 0]] contain a cycle?", "graph_solve"),
    Probe("What is the maximum flow from node 0 to node 3 in the directed graph with edges [[0, 1], [1, 3], "
          "[0, 2], [2, 3]] and capacities [3, 2, 1, 4]?", "graph_solve"),
    Probe("A model answered '4' to the triangle-count question for the graph with edges [[0, 1], [1, 2], [2, 0]]. "
          "Is that right?", "graph_check_answer"),
    Probe("Build a chain-of-thought prompt asking for the shortest path from 0 to 4 in a graph.", "graph_prompt"),
    Probe("Which graph tasks, formats and prompt schemes are there?", "graph_list_tasks"),
    Probe("Is CC(C)Cc1ccc(cc1)C(C)C(O)=O a valid molecule, and what is its canonical SMILES?", "dti_validate"),
    Probe("How strongly does imatinib (Cc1ccc(NC(=O)c2ccc(CN3CCN(C)CC3)cc2)cc1Nc1nccc(-c2cccnc2)n1) bind the "
          "kinase MKKLLPTAAAGLLLLAAQPAMA? Give the interaction probability.", "dti_score"),
    Probe("Rank the molecules of sample://dti/screening_library.smi against the target sequence "
          "MTEYKLVVVGAGGVGKSALTIQLIQNHF and keep the 5 best.", "dti_screen"),
    Probe("Which atoms of CCO drive its score against the protein MKTAYIAKQRQISFVKSHFSRQ?", "dti_explain"),
    Probe("Compute Morgan fingerprints for the molecules in sample://dti/screening_library_sample.sdf.",
          "dti_featurize"),
    Probe("Which DTI models are available, and what were they trained on?", "dti_model_card"),
    Probe("Find the commit hashes and MD5 digests in sample://nid/opacus_git_log.jsonl.", "nid_detect"),
    Probe("Make 10 random stand-ins with the same format as the git commit "
          "3f2c1b8e9d0a4b5c6d7e8f90a1b2c3d4e5f60718.", "nid_generate"),
    Probe("Scan every file under sample://nid/ for natural identifiers.", "nid_corpus_scan"),
    Probe("Split sample://longctx/alice.txt into chunks of 2000 tokens.", "longctx_chunk"),
    Probe("Reading the whole of sample://longctx/alice.txt in pieces, who does Alice meet at the tea party?",
          "longctx_answer"),
    Probe("Single-shot accuracy fell from 0.9 at 1K tokens to 0.4 at 16K tokens: should I chunk?",
          "longctx_fit_noise"),
]
